// Tests of block_locks' whole_guard (src/tools/nbd/block_locks.hpp): a write
// of whole blocks takes no stripe while no client that writes parts of
// blocks is registered, and one that registers waits until such writes have
// ended; from then on they take their stripes, as every other write. Each
// step is shown by what it does to another thread: a lock that is not held
// lets it through (a held one would hang the test), one that is held keeps
// it out until it is released.
//
//   ctest --preset tsan -R NbdBlockLocks
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "nbd/block_locks.hpp"

namespace {

using iov::nbd::block_locks;

// Yields for a while, failing if `flag` is set meanwhile: the other thread
// is still held back.
void expect_held_back(const std::atomic<bool>& flag, const char* what) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_FALSE(flag.load()) << what;
    std::this_thread::yield();
  }
}

// A guard over every stripe, taken and released on another thread while
// this one holds a whole_guard: it must not wait.
void expect_whole_guard_takes_no_stripe(block_locks& locks) {
  block_locks::whole_guard w(locks, 0, 64);
  std::thread other([&] { block_locks::guard g(locks, 0, 64); });
  other.join();
}

TEST(NbdBlockLocks, WholeWritesTakeNoStripeUntilAPartialWriterRegisters) {
  block_locks locks;
  expect_whole_guard_takes_no_stripe(locks);

  // A whole write in progress: the registration waits for it to end.
  std::atomic<bool> registered{false};
  std::thread partial;
  {
    block_locks::whole_guard w(locks, 3, 4);
    partial = std::thread([&] {
      locks.add_partial_writer();
      registered = true;
    });
    expect_held_back(registered, "add_partial_writer returned during a whole write");
  }
  partial.join();
  EXPECT_TRUE(registered.load());

  // Registered: a whole write waits for the stripe a partial write holds.
  std::atomic<bool> entered{false};
  std::thread whole;
  {
    block_locks::guard g(locks, 3, 4);
    whole = std::thread([&] {
      block_locks::whole_guard w(locks, 19, 20);  // 19 % 16: the same stripe
      entered = true;
    });
    expect_held_back(entered, "a whole write ran beside a partial write of its block");
  }
  whole.join();
  EXPECT_TRUE(entered.load());

  // Two partial writers, then none: whole writes take no stripe again.
  locks.add_partial_writer();
  locks.remove_partial_writer();
  locks.remove_partial_writer();
  expect_whole_guard_takes_no_stripe(locks);
}

}  // namespace
