// get_pages_test.cc: the page references of iov_iter_get_pages2() and
// iov_iter_get_pages_alloc2() (one per returned page, dropped by the caller's
// put_page(), as in the kernel) and their absence from
// iov_iter_extract_pages() on kernel-backed iterators. The pages expected are
// read off the layout model: the page under the first byte, then the page
// under every later byte that starts a page.
//
//   ctest -R get_pages_test
#include <sys/types.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;

using iov_test::model_pages;

// The counts, one a compound page (its pages share their head's).
std::map<iov::page*, int> ref_counts(const std::vector<iov::page*>& pages) {
  std::map<iov::page*, int> m;
  for (iov::page* p : pages) m[iov::compound_head(p)] = iov::page_ref_count(p);
  return m;
}

// Each page gains one reference per time it was returned (counted on its
// compound head); putting each returned page brings every count back.
void expect_refs_taken_then_put(const std::map<iov::page*, int>& before, iov::page** pages, size_t n) {
  std::map<iov::page*, int> times;
  for (size_t k = 0; k < n; k++) times[iov::compound_head(pages[k])]++;
  for (auto [p, t] : times) EXPECT_EQ(iov::page_ref_count(p), before.at(p) + t) << "page " << p;
  for (size_t k = 0; k < n; k++) iov::put_page(pages[k]);
  for (auto [p, c] : before) EXPECT_EQ(iov::page_ref_count(p), c) << "page " << p;
}

// Layouts whose every page holds a reference count: folios, single xarray
// pages, and bvecs and a user buffer over compound allocations.
struct CountedLayouts {
  iov::page* run = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, 2);
  iov::bio_vec bv[3] = {{run, 5000, 3000}, {run + 2, 0, 100}, {run + 2, 3000, 1000}};
  std::vector<std::unique_ptr<iov_test::Layout>> layouts;
  CountedLayouts() {
    layouts.push_back(iov_test::Layout::make_folioq({0, 1, 0, 2}, 0, 100));
    layouts.push_back(iov_test::Layout::make_folioq({1, 0, 2}, 30, 5000));
    layouts.push_back(iov_test::Layout::make_xarray(100, 3 * PAGE_SIZE));
  }
  ~CountedLayouts() { iov::__free_pages(run, 2); }
};

TEST(GetPages2Refs, OneReferencePerReturnedPageOfAQueueOrXarray) {
  CountedLayouts c;
  for (auto& l : c.layouts) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    auto before = ref_counts(model_pages(*l, 0, l->total()));
    iov::iov_iter it = l->iter(iov::ITER_SOURCE);
    size_t pos = 0;
    for (size_t maxsize : {size_t{700}, 2 * PAGE_SIZE + 1, SIZE_MAX}) {
      iov::page* pages[8];
      size_t start = 12345;
      ssize_t res = iov::iov_iter_get_pages2(&it, pages, maxsize, 3, &start);
      ASSERT_GT(res, 0);
      EXPECT_LE(static_cast<size_t>(res), maxsize);
      size_t n = (static_cast<size_t>(res) + start + PAGE_SIZE - 1) / PAGE_SIZE;
      std::vector<iov::page*> want = model_pages(*l, pos, static_cast<size_t>(res));
      EXPECT_EQ(start, iov::offset_in_page(l->addr(pos)));
      ASSERT_EQ(n, want.size());
      EXPECT_EQ(std::vector<iov::page*>(pages, pages + n), want);
      expect_refs_taken_then_put(before, pages, n);
      pos += static_cast<size_t>(res);
      iov_test::expect_at(*l, it, pos, l->total() - pos);
    }
  }
}

TEST(GetPages2Refs, BvecAndUserPagesOfACompoundAllocationCountOnItsHead) {
  CountedLayouts c;
  iov::iov_iter it;
  iov::iov_iter_bvec(&it, iov::ITER_SOURCE, c.bv, 3, 6000);
  int before = iov::page_ref_count(c.run);
  iov::page* pages[4];
  size_t start;
  ASSERT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 4, &start), 5000);
  EXPECT_EQ(iov::page_ref_count(c.run), before + 2) << "pages 0 and 1, counted on the head";
  iov::put_page(pages[0]);
  iov::put_page(pages[1]);
  EXPECT_EQ(iov::page_ref_count(c.run), before);

  char* base = reinterpret_cast<char*>(c.run);
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, base + 10, 3 * PAGE_SIZE);
  ASSERT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 4, &start), static_cast<ssize_t>(3 * PAGE_SIZE));
  EXPECT_EQ(iov::page_ref_count(c.run), before + 4) << "four pages under 3 pages from offset 10";
  for (int k = 0; k < 4; k++) iov::put_page(pages[k]);
  EXPECT_EQ(iov::page_ref_count(c.run), before);
}

// The same page at two xarray indices, and the same folio in two slots of a
// folio queue, are returned twice and referenced twice.
TEST(GetPages2Refs, APageReturnedTwiceIsReferencedTwice) {
  iov::page* pg = iov::alloc_page(iov::GFP_KERNEL);
  ASSERT_NE(pg, nullptr);
  iov::xarray xa;
  iov::xa_init(&xa);
  ASSERT_FALSE(iov::xa_is_err(iov::xa_store(&xa, 5, pg)));
  ASSERT_FALSE(iov::xa_is_err(iov::xa_store(&xa, 6, pg)));
  iov::iov_iter it;
  iov::iov_iter_xarray(&it, iov::ITER_SOURCE, &xa, 5 * PAGE_SIZE + 8, 2 * PAGE_SIZE - 8);
  iov::page* pages[4];
  size_t start;
  ASSERT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 4, &start), static_cast<ssize_t>(2 * PAGE_SIZE - 8));
  EXPECT_EQ(start, 8u);
  EXPECT_EQ(pages[0], pg);
  EXPECT_EQ(pages[1], pg);
  EXPECT_EQ(iov::page_ref_count(pg), 3);
  iov::put_page(pages[0]);
  iov::put_page(pages[1]);
  EXPECT_EQ(iov::page_ref_count(pg), 1);
  iov::xa_destroy(&xa);

  iov::folio* f = iov::page_folio(pg);
  iov::folio_queue fq;
  iov::folioq_init(&fq, 0);
  iov::folioq_append(&fq, f);
  iov::folioq_append(&fq, f);
  iov::iov_iter_folio_queue(&it, iov::ITER_SOURCE, &fq, 0, 0, 2 * PAGE_SIZE);
  iov::page** alloc = nullptr;
  ASSERT_EQ(iov::iov_iter_get_pages_alloc2(&it, &alloc, SIZE_MAX, &start), static_cast<ssize_t>(2 * PAGE_SIZE));
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc[0], pg);
  EXPECT_EQ(alloc[1], pg);
  EXPECT_EQ(iov::page_ref_count(pg), 3);
  iov::put_page(alloc[0]);
  iov::put_page(alloc[1]);
  std::free(alloc);
  EXPECT_EQ(iov::page_ref_count(pg), 1);
  iov::__free_page(pg);
}

TEST(GetPagesAlloc2Refs, ReferencesTheArraysPages) {
  auto l = iov_test::Layout::make_folioq({2, 0}, 0, 3 * PAGE_SIZE + 9);
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  std::vector<iov::page*> want = model_pages(*l, 0, l->total());
  auto before = ref_counts(want);
  iov::page** pages = nullptr;
  size_t start;
  ASSERT_EQ(iov::iov_iter_get_pages_alloc2(&it, &pages, SIZE_MAX, &start), static_cast<ssize_t>(l->total()));
  ASSERT_NE(pages, nullptr);
  EXPECT_EQ(start, 9u);
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(std::vector<iov::page*>(pages, pages + 2), want);
  expect_refs_taken_then_put(before, pages, 2);
  std::free(pages);
}

// Nothing got, nothing referenced: -EFAULT for KVEC, DISCARD and BVECQ (as
// posted), 0 at the end; the pages under them keep their counts.
TEST(GetPages2Refs, NoReferenceWhenNothingIsReturned) {
  auto l = iov_test::Layout::make_bvecq({{100, 0}, {PAGE_SIZE, 0}});
  std::vector<iov::page*> under = model_pages(*l, 0, l->total());
  auto before = ref_counts(under);
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::page* pages[4] = {};
  size_t start;
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 4, &start), -EFAULT);
  EXPECT_EQ(ref_counts(under), before);
  auto x = iov_test::Layout::make_xarray(0, PAGE_SIZE);
  it = x->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, PAGE_SIZE);
  int xb = iov::page_ref_count(x->xa_page(0));
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 4, &start), 0);
  EXPECT_EQ(iov::page_ref_count(x->xa_page(0)), xb);
}

// iov_iter_extract_pages() on a kernel-backed iterator takes nothing (the
// kernel's too: iov_iter_extract_will_pin() is false for them).
TEST(ExtractPagesRefs, KernelBackedExtractionTakesNoReference) {
  CountedLayouts c;
  for (auto& l : c.layouts) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    std::vector<iov::page*> under = model_pages(*l, 0, l->total());
    auto before = ref_counts(under);
    iov::iov_iter it = l->iter(iov::ITER_SOURCE);
    EXPECT_FALSE(iov::iov_iter_extract_will_pin(&it));
    size_t got = 0;
    while (it.count) {
      iov::page* pages[3];
      iov::page** p = pages;
      size_t off;
      ssize_t res = iov::iov_iter_extract_pages(&it, &p, SIZE_MAX, 3, 0, &off);
      ASSERT_GT(res, 0);
      std::vector<iov::page*> want = model_pages(*l, got, static_cast<size_t>(res));
      EXPECT_EQ(std::vector<iov::page*>(pages, pages + want.size()), want);
      got += static_cast<size_t>(res);
    }
    EXPECT_EQ(got, l->total());
    EXPECT_EQ(ref_counts(under), before);
  }
  iov::iov_iter it;
  iov::iov_iter_bvec(&it, iov::ITER_SOURCE, c.bv, 3, 6000);
  int before = iov::page_ref_count(c.run);
  iov::page* pages[4];
  iov::page** p = pages;
  size_t off;
  EXPECT_GT(iov::iov_iter_extract_pages(&it, &p, SIZE_MAX, 4, 0, &off), 0);
  EXPECT_EQ(iov::page_ref_count(c.run), before);
}

}  // namespace
