// kunit_iov_iter_queue_test.cc: the kernel's kunit cases of the queue
// iterators on iov, case for case with the kernel's ranges, patterns and
// expected values (the rest is in kunit_iov_iter_test.cc):
//   ITER_BVECQ  iov_kunit_copy_to_bvecq, iov_kunit_copy_from_bvecq and
//               iov_kunit_extract_pages_bvecq as posted in "[PATCH v4 15/30]
//               iov_iter: Add a segmented queue of bio_vec[]" (2026-06-16):
//               one page a slot, 13 slots a segment.
//   ITER_FOLIOQ iov_kunit_copy_to_folioq, iov_kunit_copy_from_folioq and
//               iov_kunit_extract_pages_folioq as mainline's
//               lib/tests/kunit_iov_iter.c has them: 256 one-page folios,
//               31 a segment.
// The *_scattered cases are ours: the same on pages allocated one by one.
//
//   build/tests/kunit_iov_iter_queue_test --gtest_filter='*bvecq*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <iov/iov.hpp>

#include "support/kunit_layouts.hpp"

namespace {

using namespace iov;       // NOLINT: the kernel's names, as the kernel test uses them
using namespace iov_test;  // NOLINT


using IovKunitQueue = kunit_fixture;  // support/kunit_layouts.hpp

// ---- ITER_BVECQ ----

// The posting frees the queue's pages with it; here the buffer owns them.
void iov_kunit_destroy_bvecq(void* data) {
  for (bvecq *bq = static_cast<bvecq*>(data), *next; bq; bq = next) {
    next = bq->next;
    bvecq_free(bq);
  }
}

bvecq* iov_kunit_alloc_bvecq(kunit*, unsigned max_slots) {
  bvecq* bq = bvecq_alloc(static_cast<uint16_t>(max_slots));
  if (bq == nullptr) iov_kunit_oom("iov_kunit_alloc_bvecq");
  return bq;
}

bvecq* iov_kunit_create_bvecq(kunit* test, unsigned max_slots) {
  bvecq* bq = iov_kunit_alloc_bvecq(test, max_slots);
  kunit_add_action_or_reset(test, iov_kunit_destroy_bvecq, bq);
  return bq;
}

// One page a slot; a full segment gets a new one of 13 slots behind it.
void iov_kunit_load_bvecq(kunit* test, iov_iter* iter, unsigned dir, bvecq* bq_head, page** pages,
                          size_t npages) {
  bvecq* bq = bq_head;
  size_t size = 0;

  for (size_t i = 0; i < npages; i++) {
    if (bq->nr_slots >= bq->max_slots) {
      bq->next = iov_kunit_alloc_bvecq(test, 13);
      bq->next->prev = bq;
      bq = bq->next;
    }
    bvec_set_page(&bq->bv[bq->nr_slots], pages[i], PAGE_SIZE, 0);
    bq->nr_slots++;
    size += PAGE_SIZE;
  }
  iov_iter_bvec_queue(iter, dir, bq_head, 0, 0, size);
}

// Test copying to a ITER_BVECQ-type iterator.
void iov_kunit_copy_to_bvecq(kunit* test, frames how) {
  page** spages;
  auto* scratch = static_cast<u8*>(iov_kunit_create_buffer(test, &spages, kNPages));
  for (size_t i = 0; i < kBufSize; i++) scratch[i] = pattern(i);
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_kunit_pages buffer(bpages);
  for (size_t i = 0; i < kBufSize; i++) buffer[i] = 0;
  bvecq* bq = iov_kunit_create_bvecq(test, 13);
  iov_iter iter;

  iov_kunit_load_bvecq(test, &iter, READ, bq, bpages, kNPages);

  size_t i = 0;
  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);

    iov_iter_bvec_queue(&iter, READ, bq, 0, 0, pr->to);
    iov_iter_advance(&iter, pr->from);
    size_t copied = copy_to_iter(scratch + i, size, &iter);

    EXPECT_EQ(copied, size);
    EXPECT_EQ(iter.count, 0u);
    i += size;
    if (::testing::Test::HasFailure()) return;
  }

  iov_kunit_build_to_reference_pattern(test, scratch, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, buffer, scratch, kBufSize);
}

// Test copying from a ITER_BVECQ-type iterator.
void iov_kunit_copy_from_bvecq(kunit* test, frames how) {
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_kunit_pages buffer(bpages);
  for (size_t i = 0; i < kBufSize; i++) buffer[i] = pattern(i);
  page** spages;
  auto* scratch = static_cast<u8*>(iov_kunit_create_buffer(test, &spages, kNPages));
  std::memset(scratch, 0, kBufSize);
  bvecq* bq = iov_kunit_create_bvecq(test, 13);
  iov_iter iter;

  iov_kunit_load_bvecq(test, &iter, READ, bq, bpages, kNPages);

  size_t i = 0;
  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);

    iov_iter_bvec_queue(&iter, WRITE, bq, 0, 0, pr->to);
    iov_iter_advance(&iter, pr->from);
    size_t copied = copy_from_iter(scratch + i, size, &iter);

    EXPECT_EQ(copied, size);
    EXPECT_EQ(iter.count, 0u);
    i += size;
  }

  // The expected image: the ranges of the source, back to back.
  std::vector<u8> expect(kBufSize);
  iov_kunit_build_from_reference_pattern(test, expect.data(), kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, scratch, expect.data(), kBufSize);
}

// Test the extraction of ITER_BVECQ-type iterators: each range on its own,
// its pages and offsets where the range's bytes are.
void iov_kunit_extract_pages_bvecq(kunit* test, frames how) {
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  bvecq* bq = iov_kunit_create_bvecq(test, 13);
  iov_iter iter;

  iov_kunit_load_bvecq(test, &iter, READ, bq, bpages, kNPages);

  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);
    const iov_kunit_range one[] = {*pr, {-1, 0, 0}};

    iov_iter_bvec_queue(&iter, WRITE, bq, 0, 0, pr->to);
    iov_iter_advance(&iter, pr->from);

    EXPECT_EQ(iov_kunit_extract_pages_and_check(test, &iter, bpages, kNPages, one), 0u);
    EXPECT_EQ(iter.count, 0u);
    if (::testing::Test::HasFailure()) return;
  }
}

// ---- ITER_FOLIOQ ----

// iov_kunit_create_folioq() and iov_kunit_load_folioq() are in
// support/kunit_layouts.hpp (the iter_to_sg cases use them too).

// Test copying to a ITER_FOLIOQ-type iterator.
void iov_kunit_copy_to_folioq(kunit* test, frames how) {
  page** spages;
  auto* scratch = static_cast<u8*>(iov_kunit_create_buffer(test, &spages, kNPages));
  for (size_t i = 0; i < kBufSize; i++) scratch[i] = pattern(i);
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_kunit_pages buffer(bpages);
  for (size_t i = 0; i < kBufSize; i++) buffer[i] = 0;
  folio_queue* folioq = iov_kunit_create_folioq(test);
  iov_iter iter;

  iov_kunit_load_folioq(test, &iter, READ, folioq, bpages, kNPages);

  size_t i = 0;
  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);

    iov_iter_folio_queue(&iter, READ, folioq, 0, 0, pr->to);
    iov_iter_advance(&iter, pr->from);
    size_t copied = copy_to_iter(scratch + i, size, &iter);

    EXPECT_EQ(copied, size);
    EXPECT_EQ(iter.count, 0u);
    EXPECT_EQ(iter.iov_offset, static_cast<size_t>(pr->to) % PAGE_SIZE);
    i += size;
    if (::testing::Test::HasFailure()) return;
  }

  iov_kunit_build_to_reference_pattern(test, scratch, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, buffer, scratch, kBufSize);
}

// Test copying from a ITER_FOLIOQ-type iterator.
void iov_kunit_copy_from_folioq(kunit* test, frames how) {
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_kunit_pages buffer(bpages);
  for (size_t i = 0; i < kBufSize; i++) buffer[i] = pattern(i);
  page** spages;
  auto* scratch = static_cast<u8*>(iov_kunit_create_buffer(test, &spages, kNPages));
  std::memset(scratch, 0, kBufSize);
  folio_queue* folioq = iov_kunit_create_folioq(test);
  iov_iter iter;

  iov_kunit_load_folioq(test, &iter, READ, folioq, bpages, kNPages);

  size_t i = 0;
  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);

    iov_iter_folio_queue(&iter, WRITE, folioq, 0, 0, pr->to);
    iov_iter_advance(&iter, pr->from);
    size_t copied = copy_from_iter(scratch + i, size, &iter);

    EXPECT_EQ(copied, size);
    EXPECT_EQ(iter.count, 0u);
    EXPECT_EQ(iter.iov_offset, static_cast<size_t>(pr->to) % PAGE_SIZE);
    i += size;
  }

  std::vector<u8> expect(kBufSize);
  iov_kunit_build_from_reference_pattern(test, expect.data(), kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, scratch, expect.data(), kBufSize);
}

// Test the extraction of ITER_FOLIOQ-type iterators.
void iov_kunit_extract_pages_folioq(kunit* test, frames how) {
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  folio_queue* folioq = iov_kunit_create_folioq(test);
  iov_iter iter;

  iov_kunit_load_folioq(test, &iter, READ, folioq, bpages, kNPages);

  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);
    const iov_kunit_range one[] = {*pr, {-1, 0, 0}};

    iov_iter_folio_queue(&iter, WRITE, folioq, 0, 0, pr->to);
    iov_iter_advance(&iter, pr->from);

    EXPECT_EQ(iov_kunit_extract_pages_and_check(test, &iter, bpages, kNPages, one), 0u);
    EXPECT_EQ(iter.count, 0u);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST_F(IovKunitQueue, copy_to_folioq) { iov_kunit_copy_to_folioq(test, frames::contiguous); }
TEST_F(IovKunitQueue, copy_from_folioq) { iov_kunit_copy_from_folioq(test, frames::contiguous); }
TEST_F(IovKunitQueue, extract_pages_folioq) { iov_kunit_extract_pages_folioq(test, frames::contiguous); }
TEST_F(IovKunitQueue, copy_to_folioq_scattered) { iov_kunit_copy_to_folioq(test, frames::scattered); }
TEST_F(IovKunitQueue, copy_from_folioq_scattered) { iov_kunit_copy_from_folioq(test, frames::scattered); }
TEST_F(IovKunitQueue, extract_pages_folioq_scattered) { iov_kunit_extract_pages_folioq(test, frames::scattered); }

TEST_F(IovKunitQueue, copy_to_bvecq) { iov_kunit_copy_to_bvecq(test, frames::contiguous); }
TEST_F(IovKunitQueue, copy_from_bvecq) { iov_kunit_copy_from_bvecq(test, frames::contiguous); }
TEST_F(IovKunitQueue, extract_pages_bvecq) { iov_kunit_extract_pages_bvecq(test, frames::contiguous); }
TEST_F(IovKunitQueue, copy_to_bvecq_scattered) { iov_kunit_copy_to_bvecq(test, frames::scattered); }
TEST_F(IovKunitQueue, copy_from_bvecq_scattered) { iov_kunit_copy_from_bvecq(test, frames::scattered); }
TEST_F(IovKunitQueue, extract_pages_bvecq_scattered) { iov_kunit_extract_pages_bvecq(test, frames::scattered); }

// The load helper's shape: 256 pages in segments of 13, linked both ways.
TEST_F(IovKunitQueue, load_bvecq_links_segments_of_13) {
  page** bpages = iov_kunit_create_pages(test, kNPages, frames::contiguous);
  bvecq* bq = iov_kunit_create_bvecq(test, 13);
  iov_iter iter;
  iov_kunit_load_bvecq(test, &iter, READ, bq, bpages, kNPages);
  size_t segs = 0, slots = 0;
  const bvecq* prev = nullptr;
  for (const bvecq* p = bq; p; prev = p, p = p->next, segs++) {
    EXPECT_EQ(p->prev, prev);
    EXPECT_EQ(p->max_slots, 13u);
    for (unsigned k = 0; k < p->nr_slots; k++) EXPECT_EQ(p->bv[k].bv_page, bpages[slots + k]);
    slots += p->nr_slots;
  }
  EXPECT_EQ(segs, (kNPages + 12) / 13);
  EXPECT_EQ(slots, kNPages);
  EXPECT_EQ(iter.count, kBufSize);
  EXPECT_EQ(iter.type, ITER_BVECQ);
}

}  // namespace
