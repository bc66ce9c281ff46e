// kunit_iov_iter_test.cc: the kernel's iov_iter kunit tests on iov, case for
// case with the kernel's ranges, patterns and expected values: mainline's
// lib/kunit_iov_iter.c (lib/tests/ in newer kernels) and the ITER_UBUF/ITER_IOVEC
// cases of David Howells' November 2023 series "iov_iter: kunit: Cleanup,
// abstraction and more tests" (20231115154946.3933808-7 and -8).
//
//   ninja -C build kunit_iov_iter_test && build/tests/kunit_iov_iter_test
//   build/tests/kunit_iov_iter_test --gtest_filter='IovKunit.*xarray*'
//
// The queue cases (ITER_BVECQ, ITER_FOLIOQ) are in kunit_iov_iter_queue_test.cc,
// the extract_iter_to_sg cases in kunit_iov_iter_sg_test.cc. The
// series' user buffer is an mmap() into a kthread's borrowed mm; here all
// memory is user memory, so it is an ordinary buffer and its pages are
// virt_to_page() of it (nothing is pinned, so unpin_user_pages() goes).
// The *_scattered cases are ours: the bvec and xarray cases again on pages
// allocated one by one, which mainline's buffer now is too.
#include <gtest/gtest.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include <iov/iov.hpp>

#include "support/kunit_layouts.hpp"

namespace {

using namespace iov;       // NOLINT: the kernel's names, as the kernel test uses them
using namespace iov_test;  // NOLINT


using IovKunit = kunit_fixture;  // support/kunit_layouts.hpp

void fill_pattern(const iov_kunit_pages& buffer, size_t bufsize) {
  for (size_t i = 0; i < bufsize; i++) buffer[i] = pattern(i);
}

void fill_zero(const iov_kunit_pages& buffer, size_t bufsize) {
  for (size_t i = 0; i < bufsize; i++) buffer[i] = 0;
}

// A flat buffer: one allocation, or the kernel's vmap() of swapped pages.
u8* create_buffer(kunit* test, page*** ppages, frames how) {
  void* buffer = how == frames::vmapped ? iov_kunit_create_vmap_buffer(test, ppages, kNPages)
                                        : iov_kunit_create_buffer(test, ppages, kNPages);
  return static_cast<u8*>(buffer);
}

u8* create_patterned_buffer(kunit* test, page*** ppages, frames how = frames::contiguous) {
  u8* buffer = create_buffer(test, ppages, how);
  for (size_t i = 0; i < kBufSize; i++) buffer[i] = pattern(i);
  return buffer;
}

u8* create_zeroed_buffer(kunit* test, page*** ppages, frames how = frames::contiguous) {
  u8* buffer = create_buffer(test, ppages, how);
  std::memset(buffer, 0, kBufSize);
  return buffer;
}

// ---- ITER_UBUF and ITER_IOVEC (the series' patches 6 and 7) ----

// Test copying to an ITER_UBUF-type iterator.
TEST_F(IovKunit, copy_to_ubuf) {
  page **spages, **bpages;
  u8* scratch = create_patterned_buffer(test, &spages);
  u8* buffer = create_zeroed_buffer(test, &bpages);
  iov_iter iter;

  size_t i = 0;
  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);

    iov_iter_ubuf(&iter, ITER_DEST, buffer + pr->from, size);
    size_t copied = copy_to_iter(scratch + i, size, &iter);

    EXPECT_EQ(copied, size);
    EXPECT_EQ(iter.count, 0u);
    EXPECT_EQ(iter.iov_offset, size);
    if (HasFailure()) break;
    i += size;
  }

  iov_kunit_build_to_reference_pattern(test, scratch, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, buffer, scratch, kBufSize);
}

// Test copying from an ITER_UBUF-type iterator.
TEST_F(IovKunit, copy_from_ubuf) {
  page **bpages, **spages, **rpages;
  u8* buffer = create_patterned_buffer(test, &bpages);
  u8* scratch = create_zeroed_buffer(test, &spages);
  auto* reference = static_cast<u8*>(iov_kunit_create_buffer(test, &rpages, kNPages));
  iov_iter iter;

  size_t i = 0;
  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);

    iov_iter_ubuf(&iter, ITER_SOURCE, buffer + pr->from, size);
    size_t copied = copy_from_iter(scratch + i, size, &iter);

    EXPECT_EQ(copied, size);
    EXPECT_EQ(iter.count, 0u);
    EXPECT_EQ(iter.iov_offset, size);
    if (HasFailure()) break;
    i += size;
  }

  iov_kunit_build_from_reference_pattern(test, reference, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, scratch, reference, kBufSize);
}

// Test copying to an ITER_IOVEC-type iterator.
TEST_F(IovKunit, copy_to_iovec) {
  page **spages, **bpages;
  u8* scratch = create_patterned_buffer(test, &spages);
  u8* buffer = create_zeroed_buffer(test, &bpages);
  ::iovec iov[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_iovec(test, &iter, ITER_DEST, iov, std::size(iov),
                                               buffer, kBufSize, kvec_test_ranges));
  size_t size = iter.count;

  size_t copied = copy_to_iter(scratch, size, &iter);

  EXPECT_EQ(copied, size);
  EXPECT_EQ(iter.count, 0u);
  EXPECT_EQ(iter.nr_segs, 0u);

  iov_kunit_build_to_reference_pattern(test, scratch, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, buffer, scratch, kBufSize);
}

// Test copying from an ITER_IOVEC-type iterator.
TEST_F(IovKunit, copy_from_iovec) {
  page **bpages, **spages, **rpages;
  u8* buffer = create_patterned_buffer(test, &bpages);
  u8* scratch = create_zeroed_buffer(test, &spages);
  auto* reference = static_cast<u8*>(iov_kunit_create_buffer(test, &rpages, kNPages));
  ::iovec iov[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_iovec(test, &iter, ITER_SOURCE, iov, std::size(iov),
                                               buffer, kBufSize, kvec_test_ranges));
  size_t size = iter.count;

  size_t copied = copy_from_iter(scratch, size, &iter);

  EXPECT_EQ(copied, size);
  EXPECT_EQ(iter.count, 0u);
  EXPECT_EQ(iter.nr_segs, 0u);

  iov_kunit_build_from_reference_pattern(test, reference, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, reference, scratch, kBufSize);
}

// ---- ITER_KVEC ----

// Test copying to a ITER_KVEC-type iterator.
void iov_kunit_copy_to_kvec(kunit* test, frames how) {
  page **spages, **bpages;
  u8* scratch = create_patterned_buffer(test, &spages, how);
  u8* buffer = create_zeroed_buffer(test, &bpages, how);
  iov::kvec kvec[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_kvec(test, &iter, READ, kvec, std::size(kvec), buffer,
                                              kBufSize, kvec_test_ranges));
  size_t size = iter.count;

  size_t copied = copy_to_iter(scratch, size, &iter);

  EXPECT_EQ(copied, size);
  EXPECT_EQ(iter.count, 0u);
  EXPECT_EQ(iter.nr_segs, 0u);

  iov_kunit_build_to_reference_pattern(test, scratch, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, buffer, scratch, kBufSize);
}

// Test copying from a ITER_KVEC-type iterator.
void iov_kunit_copy_from_kvec(kunit* test, frames how) {
  page **bpages, **spages;
  u8* buffer = create_patterned_buffer(test, &bpages, how);
  u8* scratch = create_zeroed_buffer(test, &spages, how);
  iov::kvec kvec[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_kvec(test, &iter, WRITE, kvec, std::size(kvec), buffer,
                                              kBufSize, kvec_test_ranges));
  size_t size = std::min(iter.count, kBufSize);

  size_t copied = copy_from_iter(scratch, size, &iter);

  EXPECT_EQ(copied, size);
  EXPECT_EQ(iter.count, 0u);
  EXPECT_EQ(iter.nr_segs, 0u);

  iov_kunit_build_from_reference_pattern(test, buffer, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, buffer, scratch, kBufSize);
}

TEST_F(IovKunit, copy_to_kvec) { iov_kunit_copy_to_kvec(test, frames::contiguous); }
TEST_F(IovKunit, copy_from_kvec) { iov_kunit_copy_from_kvec(test, frames::contiguous); }
TEST_F(IovKunit, copy_to_kvec_vmapped) { iov_kunit_copy_to_kvec(test, frames::vmapped); }
TEST_F(IovKunit, copy_from_kvec_vmapped) { iov_kunit_copy_from_kvec(test, frames::vmapped); }

// ---- ITER_BVEC ----

// Test copying to a ITER_BVEC-type iterator.
void iov_kunit_copy_to_bvec(kunit* test, frames how) {
  page** spages;
  u8* scratch = create_patterned_buffer(test, &spages);
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_kunit_pages buffer(bpages);
  fill_zero(buffer, kBufSize);
  bio_vec bvec[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_bvec(test, &iter, READ, bvec, std::size(bvec), bpages,
                                              kNPages, kBufSize, bvec_test_ranges));
  size_t size = iter.count;

  size_t copied = copy_to_iter(scratch, size, &iter);

  EXPECT_EQ(copied, size);
  EXPECT_EQ(iter.count, 0u);
  EXPECT_EQ(iter.nr_segs, 0u);

  iov_kunit_build_to_reference_pattern(test, scratch, kBufSize, bvec_test_ranges);
  iov_kunit_check_pattern(test, buffer, scratch, kBufSize);
}

// Test copying from a ITER_BVEC-type iterator.
void iov_kunit_copy_from_bvec(kunit* test, frames how) {
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_kunit_pages buffer(bpages);
  fill_pattern(buffer, kBufSize);
  page **spages, **rpages;
  u8* scratch = create_zeroed_buffer(test, &spages);
  auto* reference = static_cast<u8*>(iov_kunit_create_buffer(test, &rpages, kNPages));
  bio_vec bvec[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_bvec(test, &iter, WRITE, bvec, std::size(bvec), bpages,
                                              kNPages, kBufSize, bvec_test_ranges));
  size_t size = iter.count;

  size_t copied = copy_from_iter(scratch, size, &iter);

  EXPECT_EQ(copied, size);
  EXPECT_EQ(iter.count, 0u);
  EXPECT_EQ(iter.nr_segs, 0u);

  iov_kunit_build_from_reference_pattern(test, reference, kBufSize, bvec_test_ranges);
  iov_kunit_check_pattern(test, reference, scratch, kBufSize);
}

TEST_F(IovKunit, copy_to_bvec) { iov_kunit_copy_to_bvec(test, frames::contiguous); }
TEST_F(IovKunit, copy_from_bvec) { iov_kunit_copy_from_bvec(test, frames::contiguous); }
TEST_F(IovKunit, copy_to_bvec_scattered) { iov_kunit_copy_to_bvec(test, frames::scattered); }
TEST_F(IovKunit, copy_from_bvec_scattered) { iov_kunit_copy_from_bvec(test, frames::scattered); }

// The contiguous layout merges ranges 3..6 into one bio_vec spanning four
// frames; the scattered one merges only frames the allocator happened to put
// side by side. The loader must build what the kernel's builds, or the cases
// above prove less than they claim.
TEST_F(IovKunit, load_bvec_merges_only_adjacent_frames) {
  bio_vec bvec[8];
  iov_iter iter;
  for (frames how : {frames::contiguous, frames::scattered}) {
    page** bpages = iov_kunit_create_pages(test, kNPages, how);
    ASSERT_NO_FATAL_FAILURE(iov_kunit_load_bvec(test, &iter, READ, bvec, std::size(bvec), bpages,
                                                kNPages, kBufSize, bvec_test_ranges));
    bool adjacent = bpages[4] == bpages[3] + 1 && bpages[5] == bpages[4] + 1 &&
                    bpages[6] == bpages[5] + 1;
    if (how == frames::contiguous) {
      EXPECT_TRUE(adjacent);
    }
    EXPECT_EQ(iter.nr_segs, adjacent ? 5u : 8u);
    EXPECT_EQ(iter.count, 0u + 0x86c + 0x601 + 3 * 0x1000 + 0xffb + 1);
  }
}

// ---- ITER_XARRAY ----

// Test copying to a ITER_XARRAY-type iterator.
void iov_kunit_copy_to_xarray(kunit* test, frames how) {
  xarray* xa = iov_kunit_create_xarray(test);
  page** spages;
  u8* scratch = create_patterned_buffer(test, &spages);
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_kunit_pages buffer(bpages);
  fill_zero(buffer, kBufSize);
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_xarray(test, &iter, READ, xa, bpages, kNPages));

  size_t i = 0;
  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);

    iov_iter_xarray(&iter, READ, xa, pr->from, size);
    size_t copied = copy_to_iter(scratch + i, size, &iter);

    EXPECT_EQ(copied, size);
    EXPECT_EQ(iter.count, 0u);
    EXPECT_EQ(iter.iov_offset, size);
    i += size;
  }

  iov_kunit_build_to_reference_pattern(test, scratch, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, buffer, scratch, kBufSize);
}

// Test copying from a ITER_XARRAY-type iterator.
void iov_kunit_copy_from_xarray(kunit* test, frames how) {
  xarray* xa = iov_kunit_create_xarray(test);
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_kunit_pages buffer(bpages);
  fill_pattern(buffer, kBufSize);
  page **spages, **rpages;
  u8* scratch = create_zeroed_buffer(test, &spages);
  auto* reference = static_cast<u8*>(iov_kunit_create_buffer(test, &rpages, kNPages));
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_xarray(test, &iter, READ, xa, bpages, kNPages));

  size_t i = 0;
  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);

    iov_iter_xarray(&iter, WRITE, xa, pr->from, size);
    size_t copied = copy_from_iter(scratch + i, size, &iter);

    EXPECT_EQ(copied, size);
    EXPECT_EQ(iter.count, 0u);
    EXPECT_EQ(iter.iov_offset, size);
    i += size;
  }

  iov_kunit_build_from_reference_pattern(test, reference, kBufSize, kvec_test_ranges);
  iov_kunit_check_pattern(test, reference, scratch, kBufSize);
}

TEST_F(IovKunit, copy_to_xarray) { iov_kunit_copy_to_xarray(test, frames::contiguous); }
TEST_F(IovKunit, copy_from_xarray) { iov_kunit_copy_from_xarray(test, frames::contiguous); }
TEST_F(IovKunit, copy_to_xarray_scattered) { iov_kunit_copy_to_xarray(test, frames::scattered); }
TEST_F(IovKunit, copy_from_xarray_scattered) {
  iov_kunit_copy_from_xarray(test, frames::scattered);
}

// ---- Page extraction ----
// Each case walks the layout with iov_kunit_extract_pages_and_check(), the
// kernel's loop: calls of at most 100 KiB and 8 pages, each page and offset
// checked against where the layout puts the next byte.

// Test the extraction of ITER_UBUF-type iterators.
TEST_F(IovKunit, extract_pages_ubuf) {
  page** bpages;
  auto* buffer = static_cast<u8*>(iov_kunit_create_buffer(test, &bpages, kNPages));
  iov_iter iter;

  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);
    const iov_kunit_range one[] = {*pr, {-1, 0, 0}};

    iov_iter_ubuf(&iter, ITER_SOURCE, buffer + pr->from, size);

    EXPECT_EQ(iov_kunit_extract_pages_and_check(test, &iter, bpages, kNPages, one), 0u);
    EXPECT_EQ(iter.count, 0u);
    EXPECT_EQ(iter.iov_offset, size);
    if (HasFailure()) break;
  }
}

// Test the extraction of ITER_IOVEC-type iterators.
TEST_F(IovKunit, extract_pages_iovec) {
  page** bpages;
  auto* buffer = static_cast<u8*>(iov_kunit_create_buffer(test, &bpages, kNPages));
  ::iovec iov[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_iovec(test, &iter, ITER_SOURCE, iov, std::size(iov),
                                               buffer, kBufSize, kvec_test_ranges));

  EXPECT_EQ(iov_kunit_extract_pages_and_check(test, &iter, bpages, kNPages, kvec_test_ranges),
            0u);
  EXPECT_EQ(iter.count, 0u);
}

// Test the extraction of ITER_KVEC-type iterators. On the kernel's vmap()ped
// buffer the pages are the swapped ones, found through vmalloc_to_page().
void iov_kunit_extract_pages_kvec(kunit* test, frames how) {
  page** bpages;
  u8* buffer = create_buffer(test, &bpages, how);
  iov::kvec kvec[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_kvec(test, &iter, READ, kvec, std::size(kvec), buffer,
                                              kBufSize, kvec_test_ranges));

  EXPECT_EQ(iov_kunit_extract_pages_and_check(test, &iter, bpages, kNPages, kvec_test_ranges),
            0u);
  EXPECT_EQ(iter.count, 0u);
}

TEST_F(IovKunit, extract_pages_kvec) { iov_kunit_extract_pages_kvec(test, frames::contiguous); }
TEST_F(IovKunit, extract_pages_kvec_vmapped) { iov_kunit_extract_pages_kvec(test, frames::vmapped); }

// Test the extraction of ITER_BVEC-type iterators.
void iov_kunit_extract_pages_bvec(kunit* test, frames how) {
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  bio_vec bvec[8];
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_bvec(test, &iter, READ, bvec, std::size(bvec), bpages,
                                              kNPages, kBufSize, bvec_test_ranges));

  EXPECT_EQ(iov_kunit_extract_pages_and_check(test, &iter, bpages, kNPages, bvec_test_ranges),
            0u);
  EXPECT_EQ(iter.count, 0u);
}

// Test the extraction of ITER_XARRAY-type iterators.
void iov_kunit_extract_pages_xarray(kunit* test, frames how) {
  xarray* xa = iov_kunit_create_xarray(test);
  page** bpages = iov_kunit_create_pages(test, kNPages, how);
  iov_iter iter;

  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_xarray(test, &iter, READ, xa, bpages, kNPages));

  for (const iov_kunit_range* pr = kvec_test_ranges; pr->page >= 0; pr++) {
    size_t size = static_cast<size_t>(pr->to - pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), kBufSize);
    const iov_kunit_range one[] = {*pr, {-1, 0, 0}};

    iov_iter_xarray(&iter, WRITE, xa, pr->from, size);

    EXPECT_EQ(iov_kunit_extract_pages_and_check(test, &iter, bpages, kNPages, one), 0u);
    EXPECT_EQ(iter.count, 0u);
    EXPECT_EQ(iter.iov_offset, size);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST_F(IovKunit, extract_pages_bvec) { iov_kunit_extract_pages_bvec(test, frames::contiguous); }
TEST_F(IovKunit, extract_pages_xarray) {
  iov_kunit_extract_pages_xarray(test, frames::contiguous);
}
TEST_F(IovKunit, extract_pages_bvec_scattered) {
  iov_kunit_extract_pages_bvec(test, frames::scattered);
}
TEST_F(IovKunit, extract_pages_xarray_scattered) {
  iov_kunit_extract_pages_xarray(test, frames::scattered);
}

}  // namespace
