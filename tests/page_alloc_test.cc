// page_alloc_test.cc: the page allocator behind alloc_pages() (page.hpp,
// page_alloc.hpp) against a model of what it has handed out: every block
// naturally aligned, contiguous and writable, never handed out twice, its
// bytes untouched until freed; __GFP_ZERO honoured; reference counts and
// compound pages as the kernel's; the counters; memory given back to the
// system (resident set from /proc/self/statm); fault injection.
//
//   ctest -R page_alloc_test
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "kit/resident.hpp"
#include "support/model.hpp"
#include "support/sanitizer.hpp"

namespace {

using iov::PAGE_SIZE;

using iov_test::addr_of;

using iov_test::resident_bytes;

// What the allocator has handed out: start -> (order, tag). Each block holds
// its tag in the first and last byte of every frame, checked when it is freed.
class Model {
 public:
  ~Model() {
    while (!live_.empty())
      free(live_.begin()->first);
  }
  iov::page* alloc(iov::gfp_t gfp, unsigned order) {
    iov::page* p = iov::alloc_pages(gfp, order);
    if (!p)
      return nullptr;
    size_t bytes = PAGE_SIZE << order;
    uintptr_t a = addr_of(p);
    EXPECT_EQ(a % bytes, 0u) << "order " << order << " not naturally aligned";
    // No overlap with any live block.
    auto next = live_.lower_bound(a);
    if (next != live_.end()) {
      EXPECT_GE(next->first, a + bytes) << "handed out twice";
    }
    if (next != live_.begin()) {
      auto prev = std::prev(next);
      EXPECT_LE(prev->first + (PAGE_SIZE << prev->second.order), a) << "handed out twice";
    }
    if (gfp & iov::__GFP_ZERO) {
      for (size_t off = 0; off < bytes; off += 64)
        if (reinterpret_cast<const uint64_t*>(p)[off / 8] != 0) {
          ADD_FAILURE() << "__GFP_ZERO block not zero at " << off;
          break;
        }
    }
    unsigned char tag = static_cast<unsigned char>(++tags_ | 1);
    for (size_t f = 0; f < (size_t{1} << order); f++) {
      reinterpret_cast<unsigned char*>(p + f)[0] = tag;
      reinterpret_cast<unsigned char*>(p + f)[PAGE_SIZE - 1] = tag;
    }
    live_[a] = {order, tag};
    return p;
  }
  void free(uintptr_t a) {
    auto it = live_.find(a);
    ASSERT_NE(it, live_.end());
    auto* p = reinterpret_cast<iov::page*>(a);
    for (size_t f = 0; f < (size_t{1} << it->second.order); f++) {
      EXPECT_EQ(reinterpret_cast<unsigned char*>(p + f)[0], it->second.tag);
      EXPECT_EQ(reinterpret_cast<unsigned char*>(p + f)[PAGE_SIZE - 1], it->second.tag);
    }
    iov::__free_pages(p, it->second.order);
    live_.erase(it);
  }
  size_t size() const { return live_.size(); }
  uintptr_t nth(size_t n) const { return std::next(live_.begin(), static_cast<long>(n))->first; }

 private:
  struct block {
    unsigned order;
    unsigned char tag;
  };
  std::map<uintptr_t, block> live_;
  unsigned tags_ = 0;
};

TEST(PageAlloc, EveryOrderAlignedContiguousAndDistinct) {
  Model model;  // checks alignment, overlap, and each frame's tags at the free
  for (unsigned order = 0; order <= 11; order++)
    for (int k = 0; k < 3; k++) {
      iov::page* p = model.alloc(iov::GFP_KERNEL, order);
      ASSERT_NE(p, nullptr) << "order " << order;
      // The whole run is one writable range: fill between the tags, read back.
      for (size_t f = 0; f < (size_t{1} << order); f++)
        std::memset(reinterpret_cast<unsigned char*>(p + f) + 1, static_cast<int>(f), PAGE_SIZE - 2);
      for (size_t f = 0; f < (size_t{1} << order); f++)
        ASSERT_EQ(reinterpret_cast<unsigned char*>(p + f)[PAGE_SIZE / 2], static_cast<unsigned char>(f));
    }
}

TEST(PageAlloc, RandomSequenceAgainstTheModel) {
  Model model;
  std::mt19937_64 rng(1);
  for (int step = 0; step < 10000; step++) {
    if (model.size() && rng() % 100 < 45) {
      model.free(model.nth(rng() % model.size()));
      continue;
    }
    unsigned r = rng() % 100;
    unsigned order = r < 70 ? 0 : r < 97 ? 1 + rng() % 9 : 10 + rng() % 2;
    iov::gfp_t gfp = iov::GFP_KERNEL | (rng() % 3 == 0 ? iov::__GFP_ZERO : 0) |
                     (rng() % 2 ? iov::__GFP_COMP : 0);
    ASSERT_NE(model.alloc(gfp, order), nullptr);
    if (HasFailure())
      return;
  }
}

TEST(PageAlloc, ZeroesWhatWasWritten) {
  // Write every frame handed out, free them, then ask again with __GFP_ZERO:
  // the frames come back from the same free lists and caches, and read zero.
  for (unsigned order : {0u, 0u, 3u, 9u}) {
    std::vector<iov::page*> pages;
    for (int i = 0; i < 300; i++) {
      pages.push_back(iov::alloc_pages(iov::GFP_KERNEL, order));
      ASSERT_NE(pages.back(), nullptr);
      std::memset(pages.back(), 0xff, PAGE_SIZE << order);
    }
    for (iov::page* p : pages)
      iov::__free_pages(p, order);
    Model model;  // checks __GFP_ZERO
    for (int i = 0; i < 300; i++)
      ASSERT_NE(model.alloc(iov::GFP_KERNEL | iov::__GFP_ZERO, order), nullptr);
  }
}

TEST(PageAlloc, ReferenceCounts) {
  iov::page* p = iov::alloc_page();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(iov::page_ref_count(p), 1);
  iov::get_page(p);  // lent out
  EXPECT_EQ(iov::page_ref_count(p), 2);
  size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  iov::__free_page(p);  // the owner's free: the frame outlives it
  EXPECT_EQ(iov::page_ref_count(p), 1);
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use);
  std::memset(p, 1, PAGE_SIZE);  // still ours to use
  iov::put_page(p);              // the borrower's: now it goes
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use - 1);
}

TEST(PageAlloc, CompoundAndPlainHighOrder) {
  iov::page* comp = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, 3);
  iov::page* plain = iov::alloc_pages(iov::GFP_KERNEL, 3);
  ASSERT_TRUE(comp && plain);
  EXPECT_EQ(iov::compound_order(comp), 3u);
  EXPECT_EQ(iov::compound_head(comp + 7), comp);
  EXPECT_EQ(iov::page_ref_count(comp + 7), 1);  // the head's
  // As the kernel's: without __GFP_COMP each frame is its own head, order 0,
  // and only the first holds a reference.
  EXPECT_EQ(iov::compound_order(plain), 0u);
  EXPECT_EQ(iov::compound_head(plain + 5), plain + 5);
  EXPECT_EQ(iov::page_ref_count(plain + 5), 0);
  EXPECT_EQ(iov::page_ref_count(plain), 1);
  iov::__free_pages(comp, 3);
  iov::__free_pages(plain, 3);
  // A direct mapping (above the chunk order) behaves the same.
  iov::page* big = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, 10);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(iov::compound_head(big + 1000), big);
  EXPECT_EQ(iov::compound_order(big), 10u);
  iov::get_page(big + 3);
  EXPECT_EQ(iov::page_ref_count(big), 2);
  iov::put_page(big + 3);
  iov::__free_pages(big, 10);
}

TEST(PageAlloc, PagesNotFromTheAllocatorAreLeftAlone) {
  std::vector<unsigned char> buf(3 * PAGE_SIZE);
  iov::page* p = iov::virt_to_page(buf.data() + PAGE_SIZE);
  EXPECT_EQ(iov::page_ref_count(p), 1);
  iov::get_page(p);
  iov::put_page(p);
  iov::put_page(p);  // nothing is counted, nothing is freed
  EXPECT_EQ(iov::page_ref_count(p), 1);
  EXPECT_EQ(iov::compound_head(p), p);
  EXPECT_EQ(iov::compound_order(p), 0u);
}

TEST(PageAlloc, Counters) {
  iov::page_alloc_stats before = iov::page_alloc_read_stats();
  iov::page* a = iov::alloc_pages(iov::GFP_KERNEL, 4);
  iov::page* b = iov::alloc_page();
  iov::page* c = iov::alloc_pages(iov::GFP_KERNEL, 10);
  ASSERT_TRUE(a && b && c);
  iov::page_alloc_stats during = iov::page_alloc_read_stats();
  EXPECT_EQ(during.frames_in_use, before.frames_in_use + 16 + 1 + 1024);
  EXPECT_EQ(during.direct_bytes, before.direct_bytes + (PAGE_SIZE << 10));
  EXPECT_GE(during.chunks_held, 1u);
  EXPECT_EQ(during.frames_in_use + during.frames_cached + during.frames_free,
            during.chunks_held * iov::PAGE_ALLOC_CHUNK_SIZE / PAGE_SIZE + (during.direct_bytes / PAGE_SIZE));
  iov::__free_pages(a, 4);
  iov::__free_page(b);
  iov::__free_pages(c, 10);
  iov::page_alloc_stats after = iov::page_alloc_read_stats();
  EXPECT_EQ(after.frames_in_use, before.frames_in_use);
  EXPECT_EQ(after.direct_bytes, before.direct_bytes);
  EXPECT_GE(after.bytes_returned, before.bytes_returned + (PAGE_SIZE << 10));
}

TEST(PageAlloc, GivesMemoryBackToTheSystem) {
  constexpr size_t kBytes = 64u << 20;
  iov::page_alloc_release_free();
  size_t rss0 = resident_bytes();
  iov::page_alloc_stats s0 = iov::page_alloc_read_stats();
  std::vector<iov::page*> pages;
  for (size_t i = 0; i < kBytes / PAGE_SIZE; i++) {
    pages.push_back(iov::alloc_page());
    ASSERT_NE(pages.back(), nullptr);
    std::memset(pages.back(), 0x77, PAGE_SIZE);
  }
  size_t rss1 = resident_bytes();
  EXPECT_GE(rss1, rss0 + kBytes * 9 / 10);
  for (iov::page* p : pages)
    iov::__free_page(p);
  iov::page_alloc_drain_thread_cache();
  // Entirely free chunks went back as they emptied, but for a few spares.
  iov::page_alloc_stats s1 = iov::page_alloc_read_stats();
  EXPECT_LE(s1.chunks_held, s0.chunks_held + 8);
  EXPECT_GE(s1.bytes_returned, s0.bytes_returned + kBytes * 9 / 10);
  iov::page_alloc_release_free();
  // AddressSanitizer keeps the shadow of what was touched resident (1/8),
  // and its own allocator's metadata besides: most of kBytes must still go.
  size_t slack = size_t{4} << 20;
#if defined(IOV_TEST_ASAN)
  slack += kBytes / 4;
#endif
  EXPECT_LE(resident_bytes(), rss0 + slack);
}

TEST(PageAlloc, LongFreeRunsInALiveChunkAreReleased) {
  // Fill whole chunks, keep one frame in each, free the rest: the chunks stay,
  // but their free runs of old data are released once they add up.
  constexpr size_t kChunks = 16, kFrames = kChunks * 512;
  iov::page_alloc_release_free();
  std::vector<iov::page*> blocks;
  for (size_t i = 0; i < kChunks; i++) {
    blocks.push_back(iov::alloc_pages(iov::GFP_KERNEL, 9));
    ASSERT_NE(blocks.back(), nullptr);
    std::memset(blocks.back(), 0x11, PAGE_SIZE << 9);
  }
  size_t rss1 = resident_bytes();
  iov::page_alloc_stats s1 = iov::page_alloc_read_stats();
  std::vector<iov::page*> kept;
  for (iov::page* b : blocks) {
    iov::__free_pages(b, 9);
    kept.push_back(iov::alloc_pages(iov::GFP_KERNEL, 0));  // from the chunk just freed, or another
  }
  iov::page_alloc_stats s2 = iov::page_alloc_read_stats();
  EXPECT_GE(s2.bytes_returned - s1.bytes_returned, kFrames * PAGE_SIZE / 2);
  EXPECT_LE(resident_bytes() + kFrames * PAGE_SIZE / 2, rss1);
  for (iov::page* p : kept)
    iov::__free_page(p);
}

TEST(PageAlloc, NonBlockingAllocationsFailRatherThanWait) {
  iov::internal::page_alloc_lock_for_test();
  iov::page* order3 = reinterpret_cast<iov::page*>(1);
  iov::page* order0 = reinterpret_cast<iov::page*>(1);
  std::atomic<bool> done{false};
  std::thread t([&] {  // a fresh thread: its cache is empty, it needs the lock
    order3 = iov::alloc_pages(iov::GFP_NOWAIT, 3);
    order0 = iov::alloc_pages(iov::GFP_ATOMIC, 0);
    done.store(true);
  });
  while (!done.load())  // returns while the lock is held: it never waited for it
    std::this_thread::yield();
  iov::internal::page_alloc_unlock_for_test();
  t.join();
  EXPECT_EQ(order3, nullptr);
  EXPECT_EQ(order0, nullptr);
  iov::page* p = iov::alloc_pages(iov::GFP_NOWAIT, 3);  // the lock is free: it succeeds
  ASSERT_NE(p, nullptr);
  iov::__free_pages(p, 3);
}

TEST(PageAlloc, FreePagesRcuUsesTheFramesOwnHead) {
  size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 2);
  ASSERT_NE(p, nullptr);
  iov::free_pages_rcu(p, 2);
  iov::rcu_barrier();
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use);
  // A page still lent out waits for its last reference after the grace period.
  p = iov::alloc_page();
  iov::get_page(p);
  iov::free_page_rcu(p);
  iov::rcu_barrier();
  EXPECT_EQ(iov::page_ref_count(p), 1);
  iov::put_page(p);
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use);
}

#if defined(IOV_TEST_ASAN)
// Free frames are poisoned: a write after the free is caught, as it was when
// each page was its own malloc.
TEST(PageAllocDeathTest, UseAfterFreeIsCaughtUnderAsan) {
  EXPECT_DEATH(
      {
        iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 1);
        iov::__free_pages(p, 1);
        reinterpret_cast<volatile char*>(p)[PAGE_SIZE + 5] = 1;
      },
      "use-after-poison");
}
#endif

TEST(PageAlloc, HugeOrdersFail) { EXPECT_EQ(iov::alloc_pages(iov::GFP_KERNEL, 60), nullptr); }

#if IOV_FAULT_INJECTION
TEST(PageAlloc, FaultInjectionForcesAFailure) {
  iov::internal::page_alloc_fault_after(2);
  iov::page* a = iov::alloc_page();
  iov::page* b = iov::alloc_pages(iov::GFP_KERNEL, 3);
  EXPECT_EQ(iov::alloc_page(), nullptr);
  EXPECT_EQ(iov::alloc_pages(iov::GFP_KERNEL, 9), nullptr);
  iov::internal::page_alloc_fault_clear();
  iov::page* c = iov::alloc_page();
  EXPECT_TRUE(a && b && c);
  iov::__free_page(a);
  iov::__free_pages(b, 3);
  iov::__free_page(c);
}
#endif

}  // namespace
