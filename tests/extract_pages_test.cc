// extract_pages_test.cc: iov_iter_extract_pages (position.hpp) for every
// type, against hand-computed results and the flat model, following the
// kernel's lib/iov_iter.c.
//
//   ctest -R extract_pages_test
#include <cerrno>
#include <climits>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;
using iov_test::Chunk;
using iov_test::Kind;
using iov_test::Layout;

// ---- iov_iter_extract_pages ----

constexpr unsigned kMaxPages = 16;
iov::page* const kUnset = reinterpret_cast<iov::page*>(uintptr_t{0xdead000});

struct Extracted {
  ssize_t ret;
  size_t offset0;
  std::vector<iov::page*> pages;  // all kMaxPages slots; kUnset where untouched
};

Extracted extract(iov::iov_iter* it, size_t maxsize, unsigned maxpages) {
  Extracted e{0, SIZE_MAX, std::vector<iov::page*>(kMaxPages, kUnset)};
  iov::page** p = e.pages.data();
  e.ret = iov::iov_iter_extract_pages(it, &p, maxsize, maxpages, 0, &e.offset0);
  EXPECT_EQ(p, e.pages.data()) << "the caller's array is used";
  return e;
}

size_t div_round_up(size_t n, size_t d) { return (n + d - 1) / d; }

// UBUF, IOVEC, KVEC: the first non-empty segment from the position, as the
// frames of its memory, clipped by maxsize and maxpages.
TEST(ExtractPages, UserAndKvecFollowTheModel) {
  for (const auto& l : iov_test::mixed_layouts(81, 5)) {
    if (l->kind() != Kind::ubuf && l->kind() != Kind::iovec && l->kind() != Kind::kvec) continue;
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    for (unsigned maxpages : {1u, 2u, kMaxPages})
      for (size_t maxsize : {size_t{1333}, SIZE_MAX}) {
        iov::iov_iter it = l->iter(iov::ITER_DEST);
        size_t pos = 0;
        while (it.count) {
          SCOPED_TRACE(testing::Message() << "pos " << pos << " maxpages " << maxpages << " maxsize " << maxsize);
          const Chunk* seg = nullptr;
          for (const Chunk& c : l->runs())
            if (pos >= c.flat && pos < c.flat + c.len) seg = &c;
          ASSERT_NE(seg, nullptr);
          unsigned char* addr = seg->base + (pos - seg->flat);
          size_t offset = reinterpret_cast<uintptr_t>(addr) % PAGE_SIZE;
          size_t want = std::min({maxsize, seg->flat + seg->len - pos, maxpages * PAGE_SIZE - offset});
          Extracted e = extract(&it, maxsize, maxpages);
          ASSERT_EQ(e.ret, static_cast<ssize_t>(want));
          EXPECT_EQ(e.offset0, offset);
          size_t npages = div_round_up(offset + want, PAGE_SIZE);
          for (size_t k = 0; k < kMaxPages; k++)
            EXPECT_EQ(e.pages[k], k < npages ? iov::virt_to_page(addr) + k : kUnset) << "slot " << k;
          pos += want;
          iov_test::expect_at(*l, it, pos, l->total() - pos);
        }
      }
  }
}

// BVECQ (and the other queues): each call returns a run of pages in which
// every page after the first starts at offset 0 and every one but the last
// ends its page; byte j of the run is at page_address(pages[(offset0 + j) /
// PAGE_SIZE]) + (offset0 + j) % PAGE_SIZE, which must be the model's byte
// pos + j. The iterator advances by what was returned.
TEST(ExtractPages, QueuesFollowTheModel) {
  for (const auto& l : iov_test::mixed_layouts(83, 12)) {
    if (!iov_test::queued(l->kind())) continue;
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    for (unsigned maxpages : {1u, 3u, kMaxPages})
      for (size_t maxsize : {size_t{1333}, SIZE_MAX}) {
        iov::iov_iter it = l->iter(iov::ITER_DEST);
        size_t pos = 0;
        while (it.count) {
          SCOPED_TRACE(testing::Message() << "pos " << pos << " maxpages " << maxpages << " maxsize " << maxsize);
          Extracted e = extract(&it, maxsize, maxpages);
          ASSERT_GT(e.ret, 0) << "bytes are left";
          size_t len = static_cast<size_t>(e.ret);
          EXPECT_LE(len, maxsize);
          ASSERT_LT(e.offset0, PAGE_SIZE);
          size_t npages = div_round_up(e.offset0 + len, PAGE_SIZE);
          ASSERT_LE(npages, maxpages);
          for (size_t k = 0; k < kMaxPages; k++)
            if (k >= npages) {
              EXPECT_EQ(e.pages[k], kUnset) << "slot " << k;
            }
          for (size_t j = 0; j < len; j++) {
            size_t at = e.offset0 + j;
            auto* byte = static_cast<unsigned char*>(iov::page_address(e.pages[at / PAGE_SIZE])) + at % PAGE_SIZE;
            ASSERT_EQ(byte, l->addr(pos + j)) << "byte " << j << " of the run";
          }
          pos += len;
          iov_test::expect_at(*l, it, pos, l->total() - pos);
        }
      }
  }
}

TEST(ExtractPages, UbufHandComputed) {
  auto u = Layout::make_ubuf(10000, 100);
  iov::page* first = iov::virt_to_page(u->ubuf_base());
  iov::iov_iter it = u->iter(iov::ITER_SOURCE);
  Extracted e = extract(&it, SIZE_MAX, 2);
  EXPECT_EQ(e.ret, static_cast<ssize_t>(2 * PAGE_SIZE - 100));
  EXPECT_EQ(e.offset0, 100u);
  EXPECT_EQ(e.pages[0], first);
  EXPECT_EQ(e.pages[1], first + 1);
  e = extract(&it, SIZE_MAX, kMaxPages);
  EXPECT_EQ(e.ret, static_cast<ssize_t>(10000 - (2 * PAGE_SIZE - 100)));
  EXPECT_EQ(e.offset0, 0u);
  EXPECT_EQ(e.pages[0], first + 2);
  EXPECT_EQ(e.pages[1], kUnset);
  EXPECT_EQ(it.count, 0u);
  EXPECT_EQ(extract(&it, SIZE_MAX, kMaxPages).ret, 0) << "nothing left";
  it = u->iter(iov::ITER_SOURCE);
  e = extract(&it, 1, kMaxPages);
  EXPECT_EQ(e.ret, 1);
  EXPECT_EQ(e.offset0, 100u);
  EXPECT_EQ(e.pages[0], first);
  EXPECT_EQ(e.pages[1], kUnset);
  EXPECT_EQ(it.count, 9999u);
}

TEST(ExtractPages, KvecSkipsEmptySegments) {
  auto l = Layout::make_kvec({{0, 0}, {0, 5}, {300, 7}});
  iov::iov_iter it = l->iter(iov::ITER_DEST);
  Extracted e = extract(&it, SIZE_MAX, kMaxPages);
  EXPECT_EQ(e.ret, 300);
  EXPECT_EQ(e.offset0, 7u);
  EXPECT_EQ(e.pages[0], iov::virt_to_page(l->kvecs()[2].iov_base));
  EXPECT_EQ(it.count, 0u);
}

// BVEC: pages of consecutive bvecs while each ends its page and the next
// starts one: the caller gets one offset, into the first page, only.
TEST(ExtractPages, BvecRunsStopWhereThePagesStopBeingWhole) {
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 2);
  iov::bio_vec bv[5];
  iov::bvec_set_page(&bv[0], p, PAGE_SIZE - 1000, 1000);  // ends at the page end
  iov::bvec_set_page(&bv[1], p + 1, PAGE_SIZE, 0);
  iov::bvec_set_page(&bv[2], p + 2, 100, 0);              // ends short: the run stops after it
  iov::bvec_set_page(&bv[3], p + 3, PAGE_SIZE, 0);
  iov::bvec_set_page(&bv[4], p, 10, 8);                    // starts inside a page
  size_t total = 3 * PAGE_SIZE - 1000 + 100 + 10;
  iov::iov_iter it;
  iov::iov_iter_bvec(&it, iov::ITER_DEST, bv, 5, total);
  Extracted e = extract(&it, SIZE_MAX, kMaxPages);
  EXPECT_EQ(e.ret, static_cast<ssize_t>(PAGE_SIZE - 1000 + PAGE_SIZE + 100));
  EXPECT_EQ(e.offset0, 1000u);
  EXPECT_EQ(e.pages[0], p);
  EXPECT_EQ(e.pages[1], p + 1);
  EXPECT_EQ(e.pages[2], p + 2);
  EXPECT_EQ(e.pages[3], kUnset);
  e = extract(&it, SIZE_MAX, kMaxPages);  // bvec 3 ends its page, bvec 4 starts at 8
  EXPECT_EQ(e.ret, static_cast<ssize_t>(PAGE_SIZE));
  EXPECT_EQ(e.offset0, 0u);
  EXPECT_EQ(e.pages[0], p + 3);
  EXPECT_EQ(e.pages[1], kUnset);
  e = extract(&it, SIZE_MAX, kMaxPages);
  EXPECT_EQ(e.ret, 10);
  EXPECT_EQ(e.offset0, 8u);
  EXPECT_EQ(e.pages[0], p);
  EXPECT_EQ(it.count, 0u);

  // maxpages and maxsize cut a run.
  iov::iov_iter_bvec(&it, iov::ITER_DEST, bv, 5, total);
  e = extract(&it, SIZE_MAX, 1);
  EXPECT_EQ(e.ret, static_cast<ssize_t>(PAGE_SIZE - 1000));
  EXPECT_EQ(e.pages[1], kUnset);
  e = extract(&it, 4000, kMaxPages);  // bvec 1 cut short: the run ends there
  EXPECT_EQ(e.ret, 4000);
  EXPECT_EQ(e.offset0, 0u);
  EXPECT_EQ(e.pages[0], p + 1);
  EXPECT_EQ(e.pages[1], kUnset);
  EXPECT_EQ(it.count, total - (PAGE_SIZE - 1000) - 4000);
  e = extract(&it, SIZE_MAX, kMaxPages);
  EXPECT_EQ(e.ret, static_cast<ssize_t>(PAGE_SIZE - 4000 + 100));
  EXPECT_EQ(e.offset0, 4000u);
  EXPECT_EQ(e.pages[0], p + 1);
  EXPECT_EQ(e.pages[1], p + 2);
  iov::free_pages(p, 2);
}

TEST(ExtractPages, BvecPassesAnEmptyBvecItStandsOn) {
  auto l = Layout::make_bvec({{0, 100}, {200, 40}});
  iov::iov_iter it = l->iter(iov::ITER_DEST);
  Extracted e = extract(&it, SIZE_MAX, kMaxPages);
  EXPECT_EQ(e.ret, 200);
  EXPECT_EQ(e.offset0, 40u);
  EXPECT_EQ(e.pages[0], l->bvecs()[1].bv_page);
  EXPECT_EQ(it.count, 0u);
}

TEST(ExtractPages, BvecOverSeveralFrames) {
  // bv_offset 5000 in a run of 4 frames: frame 1 from 904, frames 2 and 3.
  auto l = Layout::make_bvec({{9000, 5000}});
  iov::page* p = l->bvecs()[0].bv_page;
  iov::iov_iter it = l->iter(iov::ITER_DEST);
  Extracted e = extract(&it, SIZE_MAX, kMaxPages);
  EXPECT_EQ(e.ret, 9000);
  EXPECT_EQ(e.offset0, 904u);
  EXPECT_EQ(e.pages[0], p + 1);
  EXPECT_EQ(e.pages[1], p + 2);
  EXPECT_EQ(e.pages[2], p + 3);
  EXPECT_EQ(e.pages[3], kUnset);
  it = l->iter(iov::ITER_DEST);
  e = extract(&it, SIZE_MAX, 2);
  EXPECT_EQ(e.ret, static_cast<ssize_t>(PAGE_SIZE - 904 + PAGE_SIZE));
  iov_test::expect_at(*l, it, PAGE_SIZE - 904 + PAGE_SIZE, 9000 - (PAGE_SIZE - 904 + PAGE_SIZE));
}

TEST(ExtractPages, XarrayStopsAtAMissingIndex) {
  auto l = Layout::make_xarray(100, 4 * PAGE_SIZE - 100, {2});
  iov::iov_iter it = l->iter(iov::ITER_DEST);
  Extracted e = extract(&it, SIZE_MAX, kMaxPages);
  EXPECT_EQ(e.ret, static_cast<ssize_t>(2 * PAGE_SIZE - 100));
  EXPECT_EQ(e.offset0, 100u);
  EXPECT_EQ(e.pages[0], l->xa_page(0));
  EXPECT_EQ(e.pages[1], l->xa_page(1));
  EXPECT_EQ(e.pages[2], kUnset);
  EXPECT_EQ(it.count, 2 * PAGE_SIZE);
  e = extract(&it, SIZE_MAX, kMaxPages);  // the iterator stands at the hole
  EXPECT_EQ(e.ret, 0);
  EXPECT_EQ(it.count, 2 * PAGE_SIZE);

  auto full = Layout::make_xarray(PAGE_SIZE + 10, 3 * PAGE_SIZE);
  it = full->iter(iov::ITER_DEST);
  e = extract(&it, 5000, kMaxPages);
  EXPECT_EQ(e.ret, 5000);
  EXPECT_EQ(e.offset0, 10u);
  EXPECT_EQ(e.pages[0], full->xa_page(0));
  EXPECT_EQ(e.pages[1], full->xa_page(1));
  e = extract(&it, SIZE_MAX, 1);
  EXPECT_EQ(e.ret, static_cast<ssize_t>(PAGE_SIZE - (10 + 5000 - PAGE_SIZE)));
  EXPECT_EQ(e.offset0, 10 + 5000 - PAGE_SIZE);
  EXPECT_EQ(e.pages[0], full->xa_page(1));
}

// Runs longer than a node of the tree (XA_CHUNK_SIZE indices), starting
// mid-node, in batches of every size up to a few nodes: each batch is the
// next consecutive pages, and a hole ends the run wherever it falls.
TEST(ExtractPages, XarrayRunsCrossTreeNodes) {
  constexpr size_t first = iov::XA_CHUNK_SIZE - 5, npages = 3 * iov::XA_CHUNK_SIZE, hole = 2 * iov::XA_CHUNK_SIZE + 1;
  auto l = Layout::make_xarray(first * PAGE_SIZE + 7, npages * PAGE_SIZE - 7, {hole});
  for (unsigned maxpages : {1u, 5u, 63u, 64u, 65u, 130u, 200u, 500u}) {
    SCOPED_TRACE(testing::Message() << "maxpages " << maxpages);
    std::vector<iov::page*> out(maxpages, kUnset);
    iov::iov_iter it = l->iter(iov::ITER_DEST);
    size_t next = 0, got_total = 0;
    for (;;) {
      iov::page** p = out.data();
      size_t offset0 = SIZE_MAX;
      ssize_t got = iov::iov_iter_extract_pages(&it, &p, SIZE_MAX, maxpages, 0, &offset0);
      if (got == 0) break;
      ASSERT_GT(got, 0);
      EXPECT_EQ(offset0, next == 0 ? 7u : 0u);
      size_t n = div_round_up(offset0 + static_cast<size_t>(got), PAGE_SIZE);
      ASSERT_LE(n, maxpages);
      for (size_t k = 0; k < n; k++) ASSERT_EQ(out[k], l->xa_page(next + k)) << "page " << next + k;
      EXPECT_TRUE(n == maxpages || next + n == hole) << "a batch ends at maxpages or the hole";
      next += n;
      got_total += static_cast<size_t>(got);
    }
    EXPECT_EQ(next, hole);
    EXPECT_EQ(got_total, hole * PAGE_SIZE - 7);
    EXPECT_EQ(it.count, (npages - hole) * PAGE_SIZE);
  }
}

TEST(ExtractPages, DiscardIsEfault) {
  iov::iov_iter it;
  iov::iov_iter_discard(&it, iov::ITER_DEST, 1000);
  EXPECT_EQ(extract(&it, SIZE_MAX, kMaxPages).ret, -EFAULT);
  EXPECT_EQ(it.count, 1000u);
}

TEST(ExtractPages, NothingToExtract) {
  for (const auto& l : iov_test::edge_layouts()) {
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
    iov_test::IterState before = iov_test::state_of(it);
    EXPECT_EQ(extract(&it, 0, kMaxPages).ret, 0) << "maxsize 0";
    EXPECT_EQ(iov_test::state_of(it), before);
    iov::iov_iter_advance(&it, SIZE_MAX);
    EXPECT_EQ(extract(&it, SIZE_MAX, kMaxPages).ret, 0) << "count 0";
  }
}

TEST(ExtractPages, AllocatesTheArrayWhenGivenNone) {
  auto u = Layout::make_ubuf(3 * PAGE_SIZE, 1);
  iov::iov_iter it = u->iter(iov::ITER_DEST);
  iov::page** pages = nullptr;
  size_t offset0;
  ASSERT_EQ(iov::iov_iter_extract_pages(&it, &pages, SIZE_MAX, kMaxPages, 0, &offset0),
            static_cast<ssize_t>(3 * PAGE_SIZE));
  ASSERT_NE(pages, nullptr);
  for (size_t k = 0; k < 4; k++) EXPECT_EQ(pages[k], iov::virt_to_page(u->ubuf_base()) + k);
  std::free(pages);
}

// One call covers at most MAX_RW_COUNT bytes, as one read or write does.
TEST(ExtractPages, CappedAtMaxRwCount) {
  iov::page* p = iov::alloc_page();
  size_t nr = iov::MAX_RW_COUNT / PAGE_SIZE + 100;
  std::vector<iov::bio_vec> bv(nr);
  for (iov::bio_vec& b : bv) iov::bvec_set_page(&b, p, PAGE_SIZE, 0);
  iov::iov_iter it;
  iov::iov_iter_bvec(&it, iov::ITER_DEST, bv.data(), nr, nr * PAGE_SIZE);
  std::vector<iov::page*> pages(nr, kUnset);
  iov::page** pp = pages.data();
  size_t offset0;
  ssize_t n = iov::iov_iter_extract_pages(&it, &pp, SIZE_MAX, static_cast<unsigned>(nr), 0, &offset0);
  EXPECT_EQ(n, static_cast<ssize_t>(iov::MAX_RW_COUNT));
  EXPECT_EQ(it.count, nr * PAGE_SIZE - iov::MAX_RW_COUNT);
  size_t used = iov::MAX_RW_COUNT / PAGE_SIZE;
  EXPECT_EQ(pages[used - 1], p);
  EXPECT_EQ(pages[used], kUnset);
  iov::free_page(p);
}

}  // namespace
