// bvecq_api_test.cc: bvecq.hpp's helpers as the v5 netfs series has them
// (allocation, the last put freeing pages per mem_type, positions, slice,
// extract, zero, shorten, expand, delete_spent), against a flat model of the
// queue's bytes and the page allocator's counters.
//
//   ctest -R bvecq_api_test
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "iov/page_alloc.hpp"

namespace {

using iov::PAGE_SIZE;

size_t frames_in_use() {
  iov::page_alloc_drain_thread_cache();
  return iov::page_alloc_read_stats().frames_in_use;
}

size_t chain_bytes(const iov::bvecq* bq) {
  size_t n = 0;
  for (; bq; bq = bq->next)
    for (unsigned s = 0; s < bq->nr_slots; s++)
      n += bq->bv[s].bv_len;
  return n;
}

// The bytes a chain names, slot by slot, from (slot, offset) of its head.
std::vector<unsigned char> chain_flat(const iov::bvecq* bq, unsigned slot = 0, size_t offset = 0) {
  std::vector<unsigned char> out;
  for (; bq; bq = bq->next, slot = 0)
    for (; slot < bq->nr_slots; slot++, offset = 0) {
      const iov::bio_vec& bv = bq->bv[slot];
      const unsigned char* p = iov::page_address(bv.bv_page) + bv.bv_offset;
      out.insert(out.end(), p + offset, p + bv.bv_len);
    }
  return out;
}

size_t bytes_from(const iov::bvecq_pos& pos) {
  size_t n = 0, offset = pos.offset;
  unsigned slot = pos.slot;
  for (const iov::bvecq* bq = pos.bvecq; bq; bq = bq->next, slot = 0)
    for (; slot < bq->nr_slots; slot++, offset = 0)
      n += bq->bv[slot].bv_len - offset;
  return n;
}

TEST(BvecqApi, AllocOneFillsAPowerOfTwoUpTo512Bytes) {
  static_assert(sizeof(iov::bvecq) + iov::BVECQ_STD_SLOTS * sizeof(iov::bio_vec) == 512);
  struct { size_t ask; unsigned got; } cases[] = {{0, 1}, {1, 1}, {2, 5}, {5, 5}, {6, 13}, {13, 13}, {14, 29}, {29, 29}, {1000, 29}};
  for (auto c : cases) {
    iov::bvecq* bq = iov::bvecq_alloc_one(c.ask, iov::GFP_KERNEL);
    ASSERT_NE(bq, nullptr);
    EXPECT_EQ(bq->max_slots, c.got) << c.ask;
    EXPECT_EQ(bq->nr_slots, 0u);
    EXPECT_EQ(bq->bv, bq->__bv);
    EXPECT_TRUE(bq->inline_bv);
    EXPECT_EQ(bq->ref.load(), 1u);
    EXPECT_EQ(bq->next, nullptr);
    iov::bvecq_put(bq);
  }
}

TEST(BvecqApi, AllocChainHasTheSlotsLinkedBothWays) {
  for (size_t want : {size_t{1}, size_t{29}, size_t{30}, size_t{70}, size_t{300}}) {
    iov::bvecq* head = iov::bvecq_alloc_chain(want, iov::GFP_KERNEL);
    ASSERT_NE(head, nullptr);
    size_t slots = 0;
    const iov::bvecq* prev = nullptr;
    for (const iov::bvecq* bq = head; bq; prev = bq, bq = bq->next) {
      EXPECT_EQ(bq->prev, prev);
      slots += bq->max_slots;
    }
    EXPECT_GE(slots, want);
    EXPECT_LT(slots - want, iov::BVECQ_STD_SLOTS);
    iov::bvecq_put(head);
  }
}

// bvecq_put of a buffer returns every page: the allocator's count is back.
TEST(BvecqApi, PutOfABufferReturnsEveryPage) {
  size_t before = frames_in_use();
  for (size_t size : {size_t{0}, size_t{1}, PAGE_SIZE, 100 * PAGE_SIZE + 1}) {
    for (unsigned pre : {0u, 3u}) {
      iov::bvecq* bq = iov::bvecq_alloc_buffer2(size, pre, iov::GFP_KERNEL);
      ASSERT_NE(bq, nullptr);
      size_t pages = (size + PAGE_SIZE - 1) / PAGE_SIZE;
      EXPECT_EQ(chain_bytes(bq), pages * PAGE_SIZE);
      EXPECT_EQ(frames_in_use(), before + pages);
      EXPECT_EQ(bq->mem_type, iov::BVECQ_MEM_ALLOCED);
      if (pages) {
        EXPECT_EQ(bq->bv[pre > 0 ? pre - 1 : 0].bv_page == nullptr, pre > 0) << "pre-slots are unset";
        EXPECT_EQ(bq->nr_slots, std::min<size_t>(pre + pages, iov::BVECQ_STD_SLOTS));
      }
      iov::bvecq_put(bq);
      EXPECT_EQ(frames_in_use(), before) << size << " " << pre;
    }
  }
  EXPECT_EQ(iov::bvecq_alloc_buffer2(PAGE_SIZE, iov::BVECQ_STD_SLOTS + 1, iov::GFP_KERNEL), nullptr);
}

// A shared segment survives the first put; pagecache pages lose one
// reference and external ones none.
TEST(BvecqApi, GetAndPutPerMemType) {
  iov::page* pg = iov::alloc_page();
  iov::get_page(pg);  // the reference the segment will drop
  iov::bvecq* bq = iov::bvecq_alloc_one(2, iov::GFP_KERNEL);
  bq->mem_type = iov::BVECQ_MEM_PAGECACHE;
  iov::bvec_set_page(&bq->bv[0], pg, PAGE_SIZE, 0);
  bq->nr_slots = 1;
  iov::bvecq_get(bq);
  iov::bvecq_put(bq);
  EXPECT_EQ(iov::page_ref_count(pg), 2);
  iov::bvecq_put(bq);
  EXPECT_EQ(iov::page_ref_count(pg), 1);
  bq = iov::bvecq_alloc_one(2, iov::GFP_KERNEL);
  bq->mem_type = iov::BVECQ_MEM_EXTERNAL;
  iov::bvec_set_page(&bq->bv[0], pg, PAGE_SIZE, 0);
  bq->nr_slots = 1;
  iov::bvecq_put(bq);
  EXPECT_EQ(iov::page_ref_count(pg), 1);
  iov::__free_page(pg);
}

// A random chain over one flat buffer: segments of random sizes (some with
// no slots), slots of random lengths (some empty, with no page).
struct Chain {
  iov::page* pages = nullptr;
  unsigned order = 6;
  std::vector<unsigned char> flat;
  iov::bvecq* head = nullptr;
  explicit Chain(std::mt19937_64& rng) {
    pages = iov::alloc_pages(iov::GFP_KERNEL, order);
    unsigned char* base = iov::page_address(pages);
    size_t cap = PAGE_SIZE << order, at = 0;
    for (size_t k = 0; k < cap; k++)
      base[k] = static_cast<unsigned char>(rng());
    iov::bvecq* tail = nullptr;
    int nseg = 1 + static_cast<int>(rng() % 6);
    for (int s = 0; s < nseg; s++) {
      iov::bvecq* bq = iov::bvecq_alloc_one(rng() % 14, iov::GFP_KERNEL);
      unsigned n = static_cast<unsigned>(rng() % (bq->max_slots + 1));
      for (unsigned k = 0; k < n; k++) {
        size_t len = rng() % 5 == 0 ? 0 : 1 + rng() % (3 * PAGE_SIZE);
        len = std::min(len, cap - at);
        if (len == 0) {
          iov::bvec_set_page(&bq->bv[k], nullptr, 0, 0);
          continue;
        }
        iov::bvec_set_page(&bq->bv[k], iov::virt_to_page(base + at), static_cast<unsigned>(len),
                           static_cast<unsigned>(iov::offset_in_page(base + at)));
        flat.insert(flat.end(), base + at, base + at + len);
        at += len + rng() % 100;
        at = std::min(at, cap);
      }
      bq->nr_slots = static_cast<uint16_t>(n);
      if (tail) {
        tail->next = bq;
        bq->prev = tail;
      } else {
        head = bq;
      }
      tail = bq;
    }
  }
  ~Chain() {
    iov::bvecq_put(head);
    iov::__free_pages(pages, order);
  }
};

// Slices and extracts taken one after another cover the queue's bytes in
// order, none twice, within the limits asked for.
TEST(BvecqApi, SlicesAndExtractsCoverTheFlatModel) {
  for (uint64_t seed = 1; seed <= 200; seed++) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    Chain c(rng);
    iov::bvecq_pos pos = {c.head, 0, 0}, pos2;
    iov::bvecq_get(c.head);
    bvecq_pos_set(&pos2, &pos);
    size_t sliced = 0;
    std::vector<unsigned char> got;
    for (int guard = 0; guard < 10000; guard++) {
      size_t max_size = 1 + rng() % (4 * PAGE_SIZE);
      unsigned max_slots = 1 + static_cast<unsigned>(rng() % 4), ns = 0;
      size_t n = iov::bvecq_slice(&pos, max_size, max_slots, &ns);
      EXPECT_LE(n, max_size);
      EXPECT_LE(ns, max_slots);
      iov::bvecq* to = nullptr;
      ssize_t e = iov::bvecq_extract(&pos2, max_size, max_slots, &to);
      if (n == 0) {
        EXPECT_EQ(e, -EIO);
        EXPECT_EQ(to, nullptr);
        break;
      }
      ASSERT_EQ(e, static_cast<ssize_t>(n));
      EXPECT_EQ(chain_bytes(to), n);
      auto part = chain_flat(to);
      got.insert(got.end(), part.begin(), part.end());
      iov::bvecq_put(to);
      sliced += n;
      // Both stop after the same bytes (the slice may also step over empty
      // slots after them, as the kernel's does).
      EXPECT_EQ(bytes_from(pos), c.flat.size() - sliced);
      EXPECT_EQ(bytes_from(pos2), c.flat.size() - sliced);
    }
    EXPECT_EQ(sliced, c.flat.size());
    EXPECT_EQ(got, c.flat);
    iov::bvecq_pos_unset(&pos);
    iov::bvecq_pos_unset(&pos2);
  }
}

// bvecq_pos_advance then bvecq_zero: exactly the model's range is zeroed.
TEST(BvecqApi, ZeroClearsTheRangeAfterAnAdvance) {
  for (uint64_t seed = 1; seed <= 200; seed++) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    Chain c(rng);
    size_t total = c.flat.size();
    size_t from = total ? rng() % (total + 1) : 0, len = rng() % (total - from + 2);
    iov::bvecq_pos pos = {iov::bvecq_get(c.head), 0, 0};
    iov::bvecq_pos_advance(&pos, from);
    ssize_t z = iov::bvecq_zero(&pos, len);
    size_t want = std::min(len, total - from);
    EXPECT_EQ(z, static_cast<ssize_t>(want));
    std::fill(c.flat.begin() + from, c.flat.begin() + from + want, 0);
    EXPECT_EQ(chain_flat(c.head), c.flat);
    // What is left from pos is the rest of the model.
    EXPECT_EQ(chain_flat(pos.bvecq, pos.slot, pos.offset),
              std::vector<unsigned char>(c.flat.begin() + from + want, c.flat.end()));
    iov::bvecq_pos_unset(&pos);
  }
}

// Bad input: a position advanced past the queue's end stays past its last
// slot; a chain with no slots slices to nothing and extracts -EIO.
TEST(BvecqApi, PastTheEndAndZeroSlotChains) {
  iov::bvecq* a = iov::bvecq_alloc_one(3, iov::GFP_KERNEL);
  iov::bvecq* b = iov::bvecq_alloc_one(3, iov::GFP_KERNEL);
  a->next = b;
  b->prev = a;
  iov::bvecq_pos pos = {iov::bvecq_get(a), 0, 0};
  unsigned ns = 99;
  EXPECT_EQ(iov::bvecq_slice(&pos, 100, 4, &ns), 0u);
  EXPECT_EQ(ns, 0u);
  iov::bvecq* to = reinterpret_cast<iov::bvecq*>(1);
  EXPECT_EQ(iov::bvecq_extract(&pos, 100, 4, &to), -EIO);
  EXPECT_EQ(to, nullptr);
  EXPECT_EQ(iov::bvecq_zero(&pos, 100), 0);
  iov::bvecq_pos_advance(&pos, 12345);
  EXPECT_EQ(pos.bvecq, b) << "never nullptr: the queue may yet grow";
  EXPECT_EQ(pos.slot, 0u);
  EXPECT_FALSE(iov::bvecq_pos_nudge(&pos));
  EXPECT_FALSE(iov::bvecq_pos_step(&pos));
  iov::bvecq_pos_unset(&pos);
  iov::bvecq_put(a);
}

// max_slots 0 is the kernel's WARN, then no limit on the slots.
TEST(BvecqApi, ExtractWithNoSlotLimit) {
  iov::bvecq* buf = iov::bvecq_alloc_buffer(5 * PAGE_SIZE, iov::GFP_KERNEL);
  iov::bvecq_pos pos = {iov::bvecq_get(buf), 0, 0};
  iov::bvecq* to = nullptr;
  EXPECT_EQ(iov::bvecq_extract(&pos, 5 * PAGE_SIZE, 0, &to), static_cast<ssize_t>(5 * PAGE_SIZE));
  ASSERT_NE(to, nullptr);
  EXPECT_EQ(to->nr_slots, 5u);
  EXPECT_EQ(chain_flat(to), chain_flat(buf));
  iov::bvecq_put(to);
  iov::bvecq_pos_unset(&pos);
  iov::bvecq_put(buf);
}

TEST(BvecqApi, ShortenKeepsNoEmptySlotAndFreesTheRest) {
  size_t before = frames_in_use();
  for (size_t keep : {size_t{0}, size_t{100}, 3 * PAGE_SIZE, 3 * PAGE_SIZE + 100, 40 * PAGE_SIZE}) {
    iov::bvecq* bq = iov::bvecq_alloc_buffer(40 * PAGE_SIZE, iov::GFP_KERNEL);
    ASSERT_EQ(iov::bvecq_shorten_buffer(bq, 0, keep), 0);
    EXPECT_EQ(chain_bytes(bq), keep);
    EXPECT_EQ(bq->nr_slots + (bq->next ? bq->next->nr_slots : 0), (keep + PAGE_SIZE - 1) / PAGE_SIZE);
    for (const iov::bvecq* q = bq; q; q = q->next)
      for (unsigned s = 0; s < q->nr_slots; s++)
        EXPECT_NE(q->bv[s].bv_len, 0u);
    EXPECT_EQ(frames_in_use(), before + (keep + PAGE_SIZE - 1) / PAGE_SIZE);
    EXPECT_EQ(iov::bvecq_shorten_buffer(bq, 0, keep + 1), -EMSGSIZE);
    iov::bvecq_put(bq);
    EXPECT_EQ(frames_in_use(), before);
  }
}

TEST(BvecqApi, ExpandGrowsInAllocatedSegments) {
  size_t before = frames_in_use();
  iov::bvecq* buf = nullptr;
  size_t cur = 0;
  ASSERT_EQ(iov::bvecq_expand_buffer(&buf, &cur, 5000, iov::GFP_KERNEL), 0);
  EXPECT_EQ(cur, 2 * PAGE_SIZE);
  ASSERT_EQ(iov::bvecq_expand_buffer(&buf, &cur, 3 << 20, iov::GFP_KERNEL), 0);
  EXPECT_GE(cur, size_t{3} << 20);
  EXPECT_EQ(chain_bytes(buf), cur);
  for (const iov::bvecq* q = buf; q; q = q->next)
    EXPECT_EQ(q->mem_type, iov::BVECQ_MEM_ALLOCED);
  ASSERT_EQ(iov::bvecq_expand_buffer(&buf, &cur, 4096, iov::GFP_KERNEL), 0) << "already big enough";
  iov::bvecq_put(buf);
  EXPECT_EQ(frames_in_use(), before);
}

// One thread's producer/consumer protocol: init, append, delete_spent.
TEST(BvecqApi, DeleteSpentKeepsTheLastSegment) {
  iov::bvecq_pos prod, cons;
  ASSERT_EQ(iov::bvecq_buffer_init(&prod, iov::GFP_KERNEL), 0);
  iov::bvecq_pos_set(&cons, &prod);
  iov::bvecq* first = prod.bvecq;
  EXPECT_FALSE(iov::bvecq_delete_spent(&cons, 0)) << "nothing after the only segment";
  iov::bvecq* second = iov::bvecq_alloc_one(4, iov::GFP_KERNEL);
  iov::bvecq_buffer_append(&prod, second);
  EXPECT_EQ(first->next, second);
  EXPECT_EQ(first->ref.load(), 1u) << "the consumer's reference only";
  // first is spent: freed, and cons moves on to second, which holds nothing yet.
  EXPECT_FALSE(iov::bvecq_delete_spent(&cons, 0));
  EXPECT_EQ(cons.bvecq, second);
  EXPECT_EQ(second->prev, nullptr);
  EXPECT_EQ(second->ref.load(), 2u);
  iov::bvecq_filled_to(second, 1);
  EXPECT_TRUE(iov::bvecq_acquire_slot(cons.bvecq, 0));
  EXPECT_FALSE(iov::bvecq_delete_spent(&cons, 0)) << "the last segment stays";
  EXPECT_EQ(cons.bvecq, second);
  second->nr_slots = 0;
  iov::bvecq_pos_unset(&cons);
  iov::bvecq_pos_unset(&prod);
}

}  // namespace
