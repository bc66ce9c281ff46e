// page_alloc_concurrent_test.cc: the page allocator from many threads at
// once (run under TSan by the tsan preset): order-0 traffic through the
// per-thread caches, higher orders through the shared lists, frees on other
// threads than the allocating one (as brd's RCU callbacks do), and lent
// pages whose last reference is dropped elsewhere. Every block carries its
// owner's tag, checked when it is freed: no frame is handed out twice.
//
//   ctest -R page_alloc_concurrent
#include <atomic>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"

namespace {

using iov::PAGE_SIZE;

struct block {
  iov::page* p;
  unsigned order;
  uint32_t tag;
};

void stamp(const block& b) {
  for (size_t f = 0; f < (size_t{1} << b.order); f++) {
    std::memcpy(b.p + f, &b.tag, sizeof b.tag);
    std::memcpy(reinterpret_cast<char*>(b.p + f + 1) - sizeof b.tag, &b.tag, sizeof b.tag);
  }
}

bool stamped(const block& b) {
  for (size_t f = 0; f < (size_t{1} << b.order); f++) {
    uint32_t head, tail;
    std::memcpy(&head, b.p + f, sizeof head);
    std::memcpy(&tail, reinterpret_cast<char*>(b.p + f + 1) - sizeof tail, sizeof tail);
    if (head != b.tag || tail != b.tag)
      return false;
  }
  return true;
}

// Blocks handed from one thread to another, to be freed there.
class Exchange {
 public:
  void put(const block& b) {
    std::lock_guard g(lock_);
    q_.push_back(b);
  }
  bool take(block* b) {
    std::lock_guard g(lock_);
    if (q_.empty())
      return false;
    *b = q_.back();
    q_.pop_back();
    return true;
  }

 private:
  std::mutex lock_;
  std::vector<block> q_;
};

TEST(PageAllocConcurrent, ManyThreadsNeverShareAFrame) {
  constexpr int kThreads = 4, kSteps = 20000;
  size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  Exchange exchange;
  std::atomic<int> bad{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<block> mine;
      for (int step = 0; step < kSteps; step++) {
        unsigned r = rng() % 100;
        if (r < 40 || mine.empty()) {
          unsigned order = rng() % 100 < 90 ? 0 : 1 + rng() % 9;
          iov::gfp_t gfp = iov::GFP_KERNEL | (rng() % 4 == 0 ? iov::__GFP_ZERO : 0);
          block b{iov::alloc_pages(gfp, order), order, (uint32_t(t) << 24) | uint32_t(step)};
          if (!b.p) {
            failed++;
            continue;
          }
          if ((gfp & iov::__GFP_ZERO) && reinterpret_cast<const uint64_t*>(b.p)[PAGE_SIZE / 16] != 0)
            bad++;
          stamp(b);
          mine.push_back(b);
        } else if (r < 60) {  // hand one to another thread
          exchange.put(mine.back());
          mine.pop_back();
        } else {
          block b;
          bool foreign = r < 80 && exchange.take(&b);
          if (!foreign) {
            b = mine.back();
            mine.pop_back();
          }
          if (!stamped(b))
            bad++;
          iov::__free_pages(b.p, b.order);
        }
      }
      for (const block& b : mine) {
        if (!stamped(b))
          bad++;
        iov::__free_pages(b.p, b.order);
      }
    });
  for (auto& th : threads)
    th.join();
  block b;
  while (exchange.take(&b)) {
    EXPECT_TRUE(stamped(b));
    iov::__free_pages(b.p, b.order);
  }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use);
}

// A page lent to readers on other threads: each takes a reference and drops
// it when done; the owner frees at once. The last put, wherever it runs,
// frees the frame, exactly once.
TEST(PageAllocConcurrent, LentPagesOutliveTheirOwner) {
  constexpr int kReaders = 3, kRounds = 2000;
  size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  for (int round = 0; round < kRounds; round += 100) {
    std::vector<iov::page*> pages;
    for (int i = 0; i < 100; i++) {
      iov::page* p = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, i % 3);
      ASSERT_NE(p, nullptr);
      std::memset(p, i, PAGE_SIZE);
      for (int r = 0; r < kReaders; r++)
        iov::get_page(p);
      pages.push_back(p);
    }
    std::atomic<int> bad{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < kReaders; r++)
      readers.emplace_back([&, r] {
        for (int i = 0; i < 100; i++) {
          iov::page* p = pages[(i + r * 37) % 100];
          if (static_cast<unsigned char*>(iov::page_address(p))[100] != static_cast<unsigned char>((i + r * 37) % 100))
            bad++;
          iov::put_page(p);
        }
      });
    for (int i = 0; i < 100; i++)
      iov::__free_pages(pages[i], i % 3);
    for (auto& th : readers)
      th.join();
    EXPECT_EQ(bad.load(), 0);
  }
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use);
}

// Statistics read while other threads allocate stay consistent.
TEST(PageAllocConcurrent, StatsWhileAllocating) {
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    std::vector<iov::page*> pages;
    while (!stop.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 600; i++)
        pages.push_back(iov::alloc_page());
      for (iov::page* p : pages)
        iov::__free_page(p);
      pages.clear();
    }
  });
  for (int i = 0; i < 2000; i++) {
    iov::page_alloc_stats s = iov::page_alloc_read_stats();
    ASSERT_EQ(s.frames_in_use + s.frames_cached + s.frames_free,
              s.chunks_held * (iov::PAGE_ALLOC_CHUNK_SIZE / PAGE_SIZE) + s.direct_bytes / PAGE_SIZE);
  }
  stop = true;
  worker.join();
}

}  // namespace
