// bvecq_concurrent_test.cc: one producer fills a bvec queue slot by slot
// (bvecq_filled_to) and appends segments (bvecq_buffer_append) while one
// consumer copies each finished segment out through an ITER_BVECQ iterator
// and frees it (bvecq_delete_spent), as netfs's rolling buffer does. Every
// byte is checked against the producer's pattern, and every page and
// segment goes back (the allocator's count, ASan's leak check). Label
// `concurrent`: run under TSan.
//
//   ctest -R bvecq_concurrent_test
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "iov/page_alloc.hpp"

namespace {

using iov::PAGE_SIZE;

unsigned char pattern(size_t g) { return static_cast<unsigned char>(g * 131 + (g >> 9)); }

TEST(BvecqConcurrent, ProducerAppendsWhileConsumerWalksAndDeletes) {
  iov::page_alloc_drain_thread_cache();
  size_t before = iov::page_alloc_read_stats().frames_in_use;
  constexpr size_t kTotal = size_t{24} << 20;

  iov::bvecq_pos prod, cons;
  ASSERT_EQ(iov::bvecq_buffer_init(&prod, iov::GFP_KERNEL), 0);
  prod.bvecq->mem_type = iov::BVECQ_MEM_ALLOCED;
  iov::bvecq_pos_set(&cons, &prod);
  std::atomic<bool> done{false};

  std::thread producer([&] {
    std::mt19937_64 rng(7);
    size_t made = 0;
    while (made < kTotal) {
      iov::bvecq* bq = prod.bvecq;
      if (iov::bvecq_is_full(bq)) {
        iov::bvecq* next = iov::bvecq_alloc_one(1 + rng() % iov::BVECQ_STD_SLOTS, iov::GFP_KERNEL);
        ASSERT_NE(next, nullptr);
        next->mem_type = iov::BVECQ_MEM_ALLOCED;
        iov::bvecq_buffer_append(&prod, next);
        continue;
      }
      iov::page* pg = iov::alloc_page();
      ASSERT_NE(pg, nullptr);
      unsigned off = static_cast<unsigned>(rng() % 512);
      unsigned len = static_cast<unsigned>(std::min<size_t>(1 + rng() % (PAGE_SIZE - off), kTotal - made));
      unsigned char* p = iov::page_address(pg);
      for (unsigned k = 0; k < len; k++)
        p[off + k] = pattern(made + k);
      unsigned slot = bq->nr_slots;
      iov::bvec_set_page(&bq->bv[slot], pg, len, off);
      iov::bvecq_filled_to(bq, slot + 1);
      made += len;
    }
    done.store(true, std::memory_order_release);
    iov::bvecq_pos_unset(&prod);
  });

  size_t seen = 0, mismatches = 0;
  std::vector<unsigned char> buf(iov::BVECQ_STD_SLOTS * PAGE_SIZE);
  for (;;) {
    iov::bvecq* bq = cons.bvecq;
    bool fin = done.load(std::memory_order_acquire);
    iov::bvecq* next = std::atomic_ref<iov::bvecq*>(bq->next).load(std::memory_order_acquire);
    if (!next && !fin) {
      std::this_thread::yield();
      continue;
    }
    // The segment is finished: the producer has moved past it.
    unsigned n = iov::bvecq_nr_slots_acquire(bq);
    size_t count = 0;
    for (unsigned s = cons.slot; s < n; s++)
      count += bq->bv[s].bv_len;
    iov::iov_iter it;
    iov::iov_iter_bvec_queue(&it, iov::ITER_SOURCE, bq, cons.slot, 0, count);
    ASSERT_EQ(iov::copy_from_iter(buf.data(), count, &it), count);
    for (size_t k = 0; k < count; k++)
      mismatches += buf[k] != pattern(seen + k);
    seen += count;
    cons.slot = static_cast<uint16_t>(n);
    if (!iov::bvecq_delete_spent(&cons, n) && fin && !next)
      break;
  }
  producer.join();
  EXPECT_EQ(seen, kTotal);
  EXPECT_EQ(mismatches, 0u);
  iov::bvecq_pos_unset(&cons);
  iov::page_alloc_drain_thread_cache();
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, before);
}

}  // namespace
