// Tests of block_locks' whole_guard (src/tools/nbd/block_locks.hpp): a write
// of whole blocks takes no stripe while no client that writes parts of
// blocks is registered, and one that registers waits until such writes have
// ended; from then on they take their stripes, as every other write. Each
// step is shown by what it does to another thread: a lock that is not held
// lets it through (a held one would hang the test), one that is held keeps
// it out until it is released.
//
//   ctest --preset tsan -R nbd_block_locks
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "nbd/block_locks.hpp"
#include "nbd/block_writer.hpp"
#include "nbd/page_payload.hpp"
#include "support/blkdev_fixture.hpp"

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

// block_writer::commit: a payload of whole pages runs in the read-side
// section; one with a partial page at an end, which the device writes and
// which may wait for a grace period, takes its stripes even with no partial
// writer registered. Each payload lands whole, read back from the device.
TEST(NbdBlockLocks, ACommitWithAPartialPageTakesItsStripes) {
  auto dev = iov_test::make_brd({.size = 1 << 20});
  block_locks locks;
  iov::nbd::block_writer writer(*dev, locks);
  struct payload_case {
    uint64_t offset, length;
    bool whole;
  };
  for (const payload_case c : {payload_case{4096, 8192, true}, payload_case{512, 4096, false},
                               payload_case{8192, 4096 + 512, false}, payload_case{0, 512, false}}) {
    SCOPED_TRACE(c.offset);
    iov::nbd::page_payload pages;
    ASSERT_TRUE(pages.prepare(c.offset, c.length));
    EXPECT_EQ(pages.whole_pages_only(), c.whole);
    std::vector<unsigned char> data(c.length);
    for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<unsigned char>(i * 7 + c.offset);
    pages.fill(data.data(), data.size());
    const uint64_t first = c.offset / 512;
    std::atomic<bool> done{false};
    std::thread committer;
    {
      block_locks::guard g(locks, first, first + 1);  // a partial write of its first block
      committer = std::thread([&] {
        const char* why = nullptr;
        EXPECT_EQ(writer.commit(pages, c.offset, c.length, 0, &why), 0) << (why ? why : "");
        done = true;
      });
      if (c.whole)
        committer.join();  // no stripe: it does not wait for the guard
      else
        expect_held_back(done, "a commit with a partial page ran beside a write of its block");
    }
    if (!c.whole)
      committer.join();
    EXPECT_TRUE(done.load());
    std::vector<unsigned char> back(c.length);
    iov::iov_iter it;
    iov::iov_iter_ubuf(&it, iov::ITER_DEST, back.data(), back.size());
    iov::blk_request rd{.op = iov::REQ_OP_READ, .sector = c.offset / 512, .iter = &it};
    ASSERT_EQ(dev->submit(rd), 0);
    EXPECT_EQ(back, data);
  }
}

}  // namespace
