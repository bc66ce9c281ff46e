// bvec_names_test.cc: the names bvec.h gained in Linux 7.3 and in the netfs
// series queued for 7.4 ("[PATCH v5 00/21] netfs: Keep track of folios in a
// segmented bio_vec[] chain"): bvec_iter's bi_offset with bi_bvec_done as
// its older name, bvec_kmap_partial(), and uio.h's iov_iter_extraction_t.
//
//   ctest -R bvec_names_test
#include <cstring>
#include <type_traits>

#include <gtest/gtest.h>

#include "iov/iov.hpp"

namespace {

using iov::PAGE_SIZE;

// One field, two names: a write through either is read through the other,
// and the layout is the kernel's (no extra word for the second name).
TEST(BvecNames, BiOffsetAndBiBvecDoneAreOneField) {
  static_assert(sizeof(iov::bvec_iter) == 20, "sector 8 + size 4 + idx 4 + offset 4, packed");
  static_assert(offsetof(iov::bvec_iter, bi_offset) == offsetof(iov::bvec_iter, bi_bvec_done));
  iov::bvec_iter it = {0, 100, 0, 0};
  it.bi_offset = 17;
  EXPECT_EQ(it.bi_bvec_done, 17u);
  it.bi_bvec_done = 33;
  EXPECT_EQ(it.bi_offset, 33u);
}

// Designated initialisers, as ported C writes them, under either name.
TEST(BvecNames, DesignatedInitialisersTakeEitherName) {
  iov::bvec_iter a = {.bi_sector = 8, .bi_size = 4096, .bi_idx = 1, .bi_offset = 12};
  iov::bvec_iter b = {.bi_sector = 8, .bi_size = 4096, .bi_idx = 1, .bi_bvec_done = 12};
  EXPECT_EQ(a.bi_bvec_done, 12u);
  EXPECT_EQ(b.bi_offset, 12u);
  EXPECT_EQ(a.bi_idx, b.bi_idx);
  EXPECT_EQ(a.bi_size, b.bi_size);
}

// The accessors and advance use the field under its new name: a bvec_iter
// positioned part-way into a bvec reports the rest of it.
TEST(BvecNames, AdvanceRecordsTheOffsetInTheBvec) {
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 1);
  ASSERT_NE(p, nullptr);
  iov::bio_vec bv[2];
  iov::bvec_set_page(&bv[0], p, 3000, 100);
  iov::bvec_set_page(&bv[1], p, 5000, 3100);
  iov::bvec_iter it = {.bi_sector = 0, .bi_size = 8000, .bi_idx = 0, .bi_offset = 0};
  ASSERT_TRUE(iov::bvec_iter_advance(bv, &it, 3000 + 1200));
  EXPECT_EQ(it.bi_idx, 1u);
  EXPECT_EQ(it.bi_offset, 1200u);
  EXPECT_EQ(it.bi_bvec_done, 1200u);
  EXPECT_EQ(iov::mp_bvec_iter_offset(bv, it), 3100u + 1200);
  EXPECT_EQ(iov::bvec_iter_offset(bv, it), (3100u + 1200) % PAGE_SIZE);
  EXPECT_EQ(iov::bvec_iter_page(bv, it), p + 1);
  iov::__free_pages(p, 1);
}

// bvec_kmap_partial maps the page holding byte `offset` of the bvec and
// points at that byte, for offsets within the first frame and beyond it.
TEST(BvecNames, KmapPartialPointsAtTheByte) {
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 2);
  ASSERT_NE(p, nullptr);
  unsigned char* base = iov::page_address(p);
  for (size_t k = 0; k < 4 * PAGE_SIZE; k++)
    base[k] = static_cast<unsigned char>(k * 7 + 3);
  iov::bio_vec bv;
  iov::bvec_set_page(&bv, p, 3 * PAGE_SIZE, 1000);
  for (size_t off : {size_t{0}, size_t{1}, PAGE_SIZE - 1000 - 1, PAGE_SIZE - 1000, 2 * PAGE_SIZE + 5,
                     3 * PAGE_SIZE - 1}) {
    SCOPED_TRACE(off);
    unsigned char* q = iov::bvec_kmap_partial(&bv, off);
    EXPECT_EQ(q, base + 1000 + off);
    EXPECT_EQ(*q, static_cast<unsigned char>((1000 + off) * 7 + 3));
    iov::kunmap_local(q);
  }
  iov::__free_pages(p, 2);
}

// iov_iter_extraction_t is what iov_iter_extract_pages() takes; the
// kernel's one flag is accepted and changes nothing.
TEST(BvecNames, ExtractionFlagsHaveTheKernelsType) {
  using Extract = ssize_t (*)(iov::iov_iter*, iov::page***, size_t, unsigned, iov::iov_iter_extraction_t, size_t*);
  Extract f = &iov::iov_iter_extract_pages;
  EXPECT_NE(f, nullptr);
  static_assert(std::is_same_v<iov::iov_iter_extraction_t, unsigned int>);
  EXPECT_EQ(iov::ITER_ALLOW_P2PDMA, 1u);

  char buf[3 * 4096];
  std::memset(buf, 0x5a, sizeof(buf));
  iov::kvec kv = {buf + 10, sizeof(buf) - 20};
  for (iov::iov_iter_extraction_t flags : {0u, iov::ITER_ALLOW_P2PDMA}) {
    iov::iov_iter it;
    iov::iov_iter_kvec(&it, iov::ITER_SOURCE, &kv, 1, kv.iov_len);
    iov::page* pages[8];
    iov::page** pp = pages;
    size_t off = 0;
    ssize_t n = iov::iov_iter_extract_pages(&it, &pp, kv.iov_len, 8, flags, &off);
    EXPECT_EQ(n, static_cast<ssize_t>(kv.iov_len));
    EXPECT_EQ(off, iov::offset_in_page(buf + 10));
    EXPECT_EQ(pages[0], iov::virt_to_page(buf + 10));
  }
}

}  // namespace
