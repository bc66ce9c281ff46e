// rcu_concurrent_test.cc: the RCU layer: deferred frees and call_rcu wait for
// the readers that may hold the object, synchronize_rcu waits for sections
// begun before it, sections nest, and nothing is left queued after
// rcu_barrier. A stress case publishes and retires objects under readers
// (ASan sees an early free, TSan a missing ordering).
//
//   ctest --preset tsan -R rcu_concurrent
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "iov/page.hpp"
#include "iov/rcu.hpp"
#include "support/sanitizer.hpp"


namespace {

using namespace std::chrono_literals;

// An object that records its destruction.
struct Tracked {
  static constexpr unsigned long kAlive = 0x600d0bec7UL;
  explicit Tracked(std::atomic<int>* freed_count) : freed(freed_count) {}
  ~Tracked() {
    magic = 0;
    freed->fetch_add(1);
  }
  unsigned long magic = kAlive;
  std::atomic<int>* freed;
};

// A one-shot flag one thread waits on.
struct Signal {
  std::atomic<bool> set{false};
  void raise() { set.store(true, std::memory_order_release); }
  void wait() const {
    while (!set.load(std::memory_order_acquire)) std::this_thread::yield();
  }
};

// A reader holds a pointer in a (nested) section; the writer unpublishes the
// object and defers its free. It must not be freed until the outer section ends.
TEST(RcuConcurrent, DeferredFreeWaitsForTheReader) {
  std::atomic<int> freed{0};
  std::atomic<Tracked*> shared{new Tracked(&freed)};
  Signal holding, retired, checked;
  std::thread reader([&] {
    iov::rcu_read_lock();
    Tracked* t = shared.load(std::memory_order_acquire);
    iov::rcu_read_lock();  // nested: its unlock must not end the section
    holding.raise();
    retired.wait();
    iov::rcu_read_unlock();
    EXPECT_TRUE(iov::rcu_read_lock_held());
    std::this_thread::sleep_for(20ms);  // room for a broken grace period to free it
    EXPECT_EQ(freed.load(), 0);
    EXPECT_EQ(t->magic, Tracked::kAlive);
    checked.raise();
    iov::rcu_read_unlock();
    EXPECT_FALSE(iov::rcu_read_lock_held());
  });
  holding.wait();
  iov::defer_delete(shared.exchange(nullptr, std::memory_order_acq_rel));
  retired.raise();
  checked.wait();
  reader.join();
  iov::rcu_barrier();
  EXPECT_EQ(freed.load(), 1);
  EXPECT_EQ(iov::internal::rcu_callbacks_pending(), 0u);
}

// call_rcu on an embedded head, as the kernel's objects do.
struct WithHead {
  int payload = 7;
  iov::rcu_head rcu;
  std::atomic<int>* ran;
};

TEST(RcuConcurrent, CallRcuRunsAfterTheReaderLeaves) {
  std::atomic<int> ran{0};
  auto* obj = new WithHead;
  obj->ran = &ran;
  std::atomic<WithHead*> shared{obj};
  Signal holding, retired, checked;
  std::thread reader([&] {
    iov::rcu_read_guard guard;
    WithHead* o = shared.load(std::memory_order_acquire);
    holding.raise();
    retired.wait();
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(o->payload, 7);
    checked.raise();
  });
  holding.wait();
  WithHead* old = shared.exchange(nullptr, std::memory_order_acq_rel);
  iov::call_rcu(&old->rcu, [](iov::rcu_head* head) {
    auto* o = reinterpret_cast<WithHead*>(reinterpret_cast<char*>(head) - offsetof(WithHead, rcu));
    o->ran->fetch_add(1);
    delete o;
  });
  retired.raise();
  checked.wait();
  reader.join();
  iov::rcu_barrier();
  EXPECT_EQ(ran.load(), 1);
}

TEST(RcuConcurrent, SynchronizeRcuWaitsForEarlierSections) {
  Signal inside, release;
  std::atomic<bool> reader_left{false}, synchronized{false};
  std::thread reader([&] {
    iov::rcu_read_guard guard;
    inside.raise();
    release.wait();
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(synchronized.load());
    reader_left = true;
  });
  inside.wait();
  std::thread waiter([&] {
    iov::synchronize_rcu();
    EXPECT_TRUE(reader_left.load());
    synchronized = true;
  });
  release.raise();
  waiter.join();
  reader.join();
  EXPECT_TRUE(synchronized.load());
}

TEST(RcuConcurrent, DeferredPageFreesAndNullAreHandled) {
  iov::free_page_rcu(iov::alloc_page());
  iov::free_pages_rcu(iov::alloc_pages(iov::GFP_KERNEL, 2), 2);
  iov::free_page_rcu(nullptr);  // as kfree_rcu(NULL): nothing queued
  iov::defer_free(nullptr, [](void*) { ADD_FAILURE() << "ran for nullptr"; });
  std::atomic<int> ran{0};
  static std::atomic<int>* counter;
  counter = &ran;
  iov::defer_free(&ran, [](void*) { counter->fetch_add(1); });
  iov::rcu_barrier();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(iov::internal::rcu_callbacks_pending(), 0u);  // LeakSanitizer checks the pages
}

// Writers keep replacing a published object and retiring the old one while
// readers dereference whatever they find.
TEST(RcuConcurrent, PublishAndRetireUnderReaders) {
  std::atomic<int> freed{0};
  std::atomic<Tracked*> shared{new Tracked(&freed)};
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0};
  auto reader = [&] {
    long n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      iov::rcu_read_guard guard;
      Tracked* t = shared.load(std::memory_order_acquire);
      if (t->magic != Tracked::kAlive) {
        ADD_FAILURE() << "read a retired object";
        stop = true;
      }
      n++;
    }
    reads += n;
  };
  constexpr int kReplacements = 20000;
  std::atomic<int> replaced{0};
  auto writer = [&] {
    auto deadline = std::chrono::steady_clock::now() + 500ms;
    for (int i = 0; i < kReplacements / 2 && !stop; i++) {
      if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
      Tracked* old = shared.exchange(new Tracked(&freed), std::memory_order_acq_rel);
      // Alternate the two ways of waiting out the readers.
      if (i % 100 == 99) {
        iov::synchronize_rcu();
        delete old;
      } else {
        iov::defer_delete(old);
      }
      replaced++;
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(reader);
  threads.emplace_back(reader);
  threads.emplace_back(writer);
  threads.emplace_back(writer);
  threads[2].join();
  threads[3].join();
  stop = true;
  threads[0].join();
  threads[1].join();
  iov::rcu_barrier();
  EXPECT_EQ(freed.load(), replaced.load());
  EXPECT_GT(reads.load(), 0);
  delete shared.load();
}

#if IOV_CHECKS && !defined(IOV_TEST_TSAN)
// Waiting for a grace period inside a section would wait for itself.
TEST(RcuChecksDeathTest, WaitingInsideASectionAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        iov::rcu_read_lock();
        iov::synchronize_rcu();
      },
      "synchronize_rcu");
  EXPECT_DEATH(
      {
        iov::rcu_read_guard guard;
        iov::rcu_barrier();
      },
      "rcu_barrier");
  EXPECT_DEATH(iov::rcu_read_unlock(), "rcu_read_unlock");
}
#endif

}  // namespace
