// position_test.cc: moving an iterator and asking about its shape
// (position.hpp) for every type, against hand-computed results and the flat
// model, following the kernel's lib/iov_iter.c.
//
//   ctest -R position_test
//   (iov_iter_extract_pages: extract_pages_test.cc)
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
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

// {len, offset} segments with zero-length ones at both ends of a middle run.
const std::vector<iov_test::SegSpec> kVecSegs = {{10, 0}, {0, 0}, {20, 0}, {0, 0}, {0, 0}, {5, 0}};

TEST(Advance, FollowsTheModel) {
  for (uint64_t seed : iov_test::test_seeds({21, 22})) {
    SCOPED_TRACE(testing::Message() << "IOV_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    for (const auto& l : iov_test::mixed_layouts(seed, 5)) {
      SCOPED_TRACE(iov_test::kind_name(l->kind()));
      iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
      size_t pos = 0;
      while (it.count) {
        size_t n = std::uniform_int_distribution<size_t>(0, PAGE_SIZE + 10)(rng);
        iov::iov_iter_advance(&it, n);
        pos += std::min(n, l->total() - pos);
        iov_test::expect_at(*l, it, pos, l->total() - pos);
      }
      iov::iov_iter before = it;
      iov::iov_iter_advance(&it, 1);  // nothing left: a no-op
      EXPECT_EQ(iov_test::state_of(it), iov_test::state_of(before));
    }
  }
}

// lib/iov_iter.c: an advance by 0 still runs the segment loop of IOVEC, KVEC
// and BVEC, which steps over the empty segments at the front when any bytes
// are left; nothing else changes.
TEST(Advance, ZeroOnlyStepsOverEmptySegmentsAtTheFront) {
  for (const auto& l : iov_test::edge_layouts()) {
    if (iov_test::queued(l->kind())) continue;  // queue_position_test.cc
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind())), before = it;
    iov::iov_iter_advance(&it, 0);
    unsigned long empty = 0;
    auto len_at = [&](unsigned long k) -> size_t {
      switch (before.type) {
        case iov::ITER_IOVEC: return before.iov[k].iov_len;
        case iov::ITER_KVEC: return before.kvec[k].iov_len;
        default: return before.bvec[k].bv_len;
      }
    };
    bool segmented = before.type == iov::ITER_IOVEC || before.type == iov::ITER_KVEC || before.type == iov::ITER_BVEC;
    if (segmented && before.count)
      while (empty < before.nr_segs && len_at(empty) == 0) empty++;
    EXPECT_EQ(it.count, before.count);
    EXPECT_EQ(it.iov_offset, before.iov_offset);
    if (segmented) {
      EXPECT_EQ(before.nr_segs - it.nr_segs, empty) << iov_test::kind_name(l->kind());
      EXPECT_EQ(static_cast<const char*>(static_cast<const void*>(it.iov)) -
                    static_cast<const char*>(static_cast<const void*>(before.iov)),
                static_cast<ptrdiff_t>(empty * (before.type == iov::ITER_BVEC ? sizeof(iov::bio_vec) : sizeof(::iovec))));
    } else {
      EXPECT_EQ(iov_test::state_of(it), iov_test::state_of(before));
    }
  }
}

TEST(Advance, ClampsToTheCount) {
  for (const auto& l : iov_test::edge_layouts()) {
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()), l->total() / 2);
    iov::iov_iter_advance(&it, SIZE_MAX);
    EXPECT_EQ(it.count, 0u);
  }
}

// lib/iov_iter.c iov_iter_iovec_advance(): stop in the first segment the
// remaining size does not exhaust, passing zero-length ones.
TEST(Advance, VecSegmentsAsTheKernel) {
  for (Kind k : {Kind::iovec, Kind::kvec}) {
    auto l = k == Kind::iovec ? Layout::make_iovec(kVecSegs) : Layout::make_kvec(kVecSegs);
    iov::iov_iter it = l->iter(iov::ITER_SOURCE);
    iov::iov_iter_advance(&it, 3);
    EXPECT_EQ(it.iov_offset, 3u);
    EXPECT_EQ(it.nr_segs, 6u);
    iov::iov_iter_advance(&it, 7);  // exhausts segment 0: passes the empty segment 1
    EXPECT_EQ(it.iov_offset, 0u);
    EXPECT_EQ(it.nr_segs, 4u);
    EXPECT_EQ(iov_test::state_of(it).segs, k == Kind::iovec ? static_cast<const void*>(&l->iovecs()[2])
                                                              : static_cast<const void*>(&l->kvecs()[2]));
    iov::iov_iter_advance(&it, 20);  // passes segments 3 and 4
    EXPECT_EQ(it.iov_offset, 0u);
    EXPECT_EQ(it.nr_segs, 1u);
    EXPECT_EQ(it.count, 5u);
    iov::iov_iter_advance(&it, 5);
    EXPECT_EQ(it.nr_segs, 0u);
    EXPECT_EQ(it.count, 0u);
  }
}

TEST(Advance, BvecAsTheKernel) {
  auto l = Layout::make_bvec({{100, 5000}, {0, 7}, {PAGE_SIZE, 0}});
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 99);
  EXPECT_EQ(it.iov_offset, 99u);
  EXPECT_EQ(it.nr_segs, 3u);
  iov::iov_iter_advance(&it, 1);
  EXPECT_EQ(it.iov_offset, 0u);
  EXPECT_EQ(it.nr_segs, 1u);
  EXPECT_EQ(it.bvec, &l->bvecs()[2]);
}

TEST(Revert, UndoesAnyAdvanceOrWalk) {
  for (uint64_t seed : iov_test::test_seeds({31, 32})) {
    SCOPED_TRACE(testing::Message() << "IOV_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    auto uni = [&](size_t hi) { return std::uniform_int_distribution<size_t>(0, hi)(rng); };
    for (const auto& l : iov_test::mixed_layouts(seed, 5)) {
      SCOPED_TRACE(iov_test::kind_name(l->kind()));
      for (int round = 0; round < 8; round++) {
        iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
        size_t a = uni(l->total());
        if (round % 2) {
          iov::iov_iter_advance(&it, a);
        } else {
          std::vector<unsigned char> sink(a);
          if (l->kind() == Kind::discard) {
            ASSERT_EQ(iov::copy_to_iter(sink.data(), a, &it), a);
          } else {
            ASSERT_EQ(iov::copy_from_iter(sink.data(), a, &it), a);
          }
        }
        size_t b = uni(a);
        iov::iov_iter_revert(&it, b);
        iov_test::expect_at(*l, it, a - b, l->total() - a + b);
        iov::iov_iter_revert(&it, a - b);  // all the way back to the start
        iov_test::expect_at(*l, it, 0, l->total());
      }
    }
  }
}

// lib/iov_iter.c iov_iter_revert(): walk back segment by segment; landing on
// a boundary leaves the iterator at the end of the earlier non-empty segment
// only when the unrolled size reaches into it.
TEST(Revert, AcrossSegmentBoundariesAsTheKernel) {
  for (Kind k : {Kind::iovec, Kind::kvec}) {
    auto l = k == Kind::iovec ? Layout::make_iovec(kVecSegs) : Layout::make_kvec(kVecSegs);
    auto seg = [&](size_t n) {
      return k == Kind::iovec ? static_cast<const void*>(&l->iovecs()[n]) : static_cast<const void*>(&l->kvecs()[n]);
    };
    iov::iov_iter it = l->iter(iov::ITER_SOURCE);
    iov::iov_iter_advance(&it, 35);
    iov::iov_iter_revert(&it, 5);
    EXPECT_EQ(iov_test::state_of(it).segs, seg(5));
    EXPECT_EQ(it.iov_offset, 0u);
    EXPECT_EQ(it.nr_segs, 1u);
    iov::iov_iter_revert(&it, 1);  // over the empty segments 4 and 3 into 2
    EXPECT_EQ(iov_test::state_of(it).segs, seg(2));
    EXPECT_EQ(it.iov_offset, 19u);
    EXPECT_EQ(it.nr_segs, 4u);
    EXPECT_EQ(it.count, 6u);
    iov::iov_iter_revert(&it, 19);
    EXPECT_EQ(it.iov_offset, 0u);
    EXPECT_EQ(it.nr_segs, 4u);
    iov::iov_iter_revert(&it, 1);  // over the empty segment 1 into 0
    EXPECT_EQ(iov_test::state_of(it).segs, seg(0));
    EXPECT_EQ(it.iov_offset, 9u);
    EXPECT_EQ(it.nr_segs, 6u);
    EXPECT_EQ(it.count, 26u);
  }
}

TEST(Revert, FromAnEmptySegmentAWalkStoppedOn) {
  // A walk of exactly the first segment leaves the iterator on the empty one.
  auto l = Layout::make_bvec({{100, 0}, {0, 0}, {50, 0}});
  l->fill(3);
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  std::vector<unsigned char> sink(100);
  ASSERT_EQ(iov::copy_from_iter(sink.data(), 100, &it), 100u);
  iov::iov_iter_revert(&it, 1);
  EXPECT_EQ(it.bvec, &l->bvecs()[0]);
  EXPECT_EQ(it.iov_offset, 99u);
  EXPECT_EQ(it.nr_segs, 3u);
  iov_test::expect_at(*l, it, 99, 51);
}

TEST(Revert, ZeroAndOversizedAreIgnored) {
  for (const auto& l : iov_test::edge_layouts()) {
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
    iov::iov_iter_advance(&it, l->total() / 2);
    iov::iov_iter before = it;
    iov::iov_iter_revert(&it, 0);
    EXPECT_EQ(iov_test::state_of(it), iov_test::state_of(before));
    iov::iov_iter_revert(&it, iov::MAX_RW_COUNT + 1);  // the kernel WARNs and returns
    EXPECT_EQ(iov_test::state_of(it), iov_test::state_of(before));
  }
}

TEST(Revert, DiscardOnlyCounts) {
  iov::iov_iter it;
  iov::iov_iter_discard(&it, iov::ITER_DEST, 100);
  iov::iov_iter_revert(&it, 1000);
  EXPECT_EQ(it.count, 1100u);
}

TEST(Truncate, OnlyShrinks) {
  for (const auto& l : iov_test::edge_layouts()) {
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
    iov::iov_iter_advance(&it, 1);
    iov_test::IterState before = iov_test::state_of(it);
    iov::iov_iter_truncate(&it, UINT64_MAX);
    EXPECT_EQ(iov_test::state_of(it), before);
    iov::iov_iter_truncate(&it, before.count + 1);
    EXPECT_EQ(iov_test::state_of(it), before);
    iov::iov_iter_truncate(&it, before.count / 2);
    iov_test::IterState want = before;
    want.count = before.count / 2;
    EXPECT_EQ(iov_test::state_of(it), want);
    iov::iov_iter_truncate(&it, 0);
    EXPECT_EQ(it.count, 0u);
  }
}

TEST(Reexpand, RestoresWhatTruncateTookWithinTheSegments) {
  for (const auto& l : iov_test::mixed_layouts(41, 5)) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    size_t pos = l->total() / 3;
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
    iov::iov_iter_advance(&it, pos);
    size_t left = l->total() - pos;
    iov::iov_iter_truncate(&it, left / 4);
    iov::iov_iter_reexpand(&it, left / 2);
    iov_test::expect_at(*l, it, pos, left / 2);
    iov::iov_iter_reexpand(&it, left);  // everything the segments hold
    iov_test::expect_at(*l, it, pos, left);
    if (l->kind() != Kind::discard && l->reachable() == l->total()) {
      std::vector<unsigned char> got(left), flat = l->gather();
      ASSERT_EQ(iov::copy_from_iter(got.data(), left, &it), left);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), flat.begin() + pos));
    }
  }
}

TEST(SingleSegCount, VecAndBvecAsTheKernel) {
  for (Kind k : {Kind::iovec, Kind::kvec, Kind::bvec}) {
    SCOPED_TRACE(iov_test::kind_name(k));
    auto l = k == Kind::iovec ? Layout::make_iovec(kVecSegs)
                              : k == Kind::kvec ? Layout::make_kvec(kVecSegs) : Layout::make_bvec(kVecSegs);
    iov::iov_iter it = l->iter(iov::ITER_SOURCE);
    EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 10u);
    iov::iov_iter_advance(&it, 3);
    EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 7u);
    iov::iov_iter_truncate(&it, 4);
    EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 4u) << "never more than the count";
    iov::iov_iter_reexpand(&it, 32);
    iov::iov_iter_advance(&it, 7);
    EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 20u);
    iov::iov_iter_advance(&it, 20);  // the last segment: nr_segs == 1, the count
    EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 5u);
    // A walk that ends a segment leaves the iterator on the empty one after it.
    it = l->iter(iov::ITER_SOURCE);
    std::vector<unsigned char> sink(10);
    ASSERT_EQ(iov::copy_from_iter(sink.data(), 10, &it), 10u);
    EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 0u);
  }
}

TEST(SingleSegCount, OtherTypesAreTheCount) {
  for (const auto& l : iov_test::edge_layouts()) {
    if (l->kind() == Kind::iovec || l->kind() == Kind::kvec || l->kind() == Kind::bvec) continue;
    if (iov_test::queued(l->kind())) continue;  // queue_position_test.cc
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
    iov::iov_iter_advance(&it, 1);
    EXPECT_EQ(iov::iov_iter_single_seg_count(&it), it.count);
  }
}

// Pages the bytes pos .. pos + count touch, counted per segment as the kernel
// does (two segments in one page count it twice). The kernel's bvec_npages()
// also counts an empty bvec it passes that starts inside a page, as one page.
// An iterator at pos stands on the segments from pos on, except that a fresh
// one (pos 0) stands on the very first, empty or not.
int model_npages(const Layout& l, size_t pos, size_t count) {
  if (!count || l.kind() == Kind::discard) return 0;
  if (l.kind() == Kind::xarray) {
    size_t a = static_cast<size_t>(l.xa_start()) + pos, b = a + count - 1;
    return static_cast<int>(b / PAGE_SIZE - a / PAGE_SIZE + 1);
  }
  int n = 0;
  for (const Chunk& c : l.runs()) {
    // An empty bvec the advance to pos stepped over (as the kernel's, even an
    // advance by 0) is not counted; one further on is, if it is not page-aligned.
    if (l.kind() == Kind::bvec && !c.len && c.flat < pos + count && c.flat > pos) {
      n += reinterpret_cast<uintptr_t>(c.base) % PAGE_SIZE != 0;
      continue;
    }
    size_t a = std::max(pos, c.flat), b = std::min(pos + count, c.flat + c.len);
    if (a >= b) continue;
    uintptr_t first = reinterpret_cast<uintptr_t>(c.base + (a - c.flat));
    uintptr_t last = first + (b - a) - 1;
    n += static_cast<int>(last / PAGE_SIZE - first / PAGE_SIZE + 1);
  }
  return n;
}

TEST(Npages, FollowsTheModelWithCaps) {
  for (const auto& l : iov_test::mixed_layouts(51, 5)) {
    if (iov_test::queued(l->kind())) continue;  // queue_position_test.cc
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    for (size_t pos : {size_t{0}, size_t{1}, l->total() / 2}) {
      if (pos > l->total()) continue;
      for (size_t count : {l->total() - pos, (l->total() - pos) / 3}) {
        iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
        iov::iov_iter_advance(&it, pos);
        iov::iov_iter_truncate(&it, count);
        int want = model_npages(*l, pos, count);
        EXPECT_EQ(iov::iov_iter_npages(&it, INT_MAX), want) << "pos " << pos << " count " << count;
        for (int cap : {0, 1, 2, want - 1, want, want + 1}) {
          if (cap >= 0) {
            EXPECT_EQ(iov::iov_iter_npages(&it, cap), std::min(want, cap)) << "cap " << cap;
          }
        }
      }
    }
  }
}

TEST(Npages, HandComputed) {
  auto u = Layout::make_ubuf(8000, 100);
  iov::iov_iter it = u->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::iov_iter_npages(&it, 100), 2);  // 100 + 8000 bytes from a page start
  EXPECT_EQ(iov::iov_iter_npages(&it, 1), 1);
  auto one = Layout::make_ubuf(PAGE_SIZE, 0);
  it = one->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::iov_iter_npages(&it, 100), 1);
  auto two = Layout::make_ubuf(2, PAGE_SIZE - 1);
  it = two->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::iov_iter_npages(&it, 100), 2);
  // Two short segments in one page each count a page; the empty one none.
  auto v = Layout::make_iovec({{10, 0}, {0, 0}, {10, 4090}});
  it = v->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::iov_iter_npages(&it, 100), 1 + 2);
  auto x = Layout::make_xarray(PAGE_SIZE + 4000, 200);
  it = x->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::iov_iter_npages(&it, 100), 2);
  iov::iov_iter_discard(&it, iov::ITER_DEST, 100000);
  EXPECT_EQ(iov::iov_iter_npages(&it, 100), 0);
}

TEST(Alignment, UserAndKernelVecsFollowTheModel) {
  for (const auto& l : iov_test::mixed_layouts(61, 5)) {
    if (l->kind() != Kind::ubuf && l->kind() != Kind::iovec && l->kind() != Kind::kvec) continue;
    for (size_t pos : {size_t{0}, l->total() / 3}) {
      size_t count = l->total() - pos;
      if (!count) continue;
      iov::iov_iter it = l->iter(iov::ITER_DEST);
      iov::iov_iter_advance(&it, pos);
      // The OR of every non-empty segment piece's address and length.
      unsigned long want = 0;
      for (const Chunk& c : l->runs()) {
        size_t a = std::max(pos, c.flat), b = c.flat + c.len;
        if (a >= b) continue;
        want |= reinterpret_cast<unsigned long>(c.base + (a - c.flat)) | (b - a);
      }
      EXPECT_EQ(iov::iov_iter_alignment(&it), want) << iov_test::kind_name(l->kind());
    }
  }
}

TEST(Alignment, HandComputed) {
  auto u = Layout::make_ubuf(1000, 24);
  iov::iov_iter it = u->iter(iov::ITER_DEST);
  auto ubase = reinterpret_cast<unsigned long>(u->ubuf_base());
  EXPECT_EQ(iov::iov_iter_alignment(&it), ubase | 1000);
  iov::iov_iter_advance(&it, 8);
  EXPECT_EQ(iov::iov_iter_alignment(&it), (ubase + 8) | 992);
  iov::iov_iter_advance(&it, 992);
  EXPECT_EQ(iov::iov_iter_alignment(&it), 0u) << "an empty UBUF";

  // BVEC: the offsets into the pages, empty bvecs on the way included.
  auto b = Layout::make_bvec({{100, 10}, {0, 3}, {PAGE_SIZE, 0}});
  it = b->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::iov_iter_alignment(&it), 10ul | 100 | 3 | PAGE_SIZE);
  iov::iov_iter_truncate(&it, 50);
  EXPECT_EQ(iov::iov_iter_alignment(&it), 10ul | 50);
  iov::iov_iter_reexpand(&it, 100 + PAGE_SIZE);
  iov::iov_iter_advance(&it, 100);  // passes the empty bvec
  EXPECT_EQ(iov::iov_iter_alignment(&it), PAGE_SIZE);

  auto x = Layout::make_xarray(3 * PAGE_SIZE + 512, 1024);
  it = x->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::iov_iter_alignment(&it), (3 * PAGE_SIZE + 512) | 1024);
  iov::iov_iter_discard(&it, iov::ITER_DEST, 12345);
  EXPECT_EQ(iov::iov_iter_alignment(&it), 0u);
}

TEST(IsAligned, HandComputed) {
  auto u = Layout::make_ubuf(1024, 512);
  iov::iov_iter it = u->iter(iov::ITER_DEST);
  EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 511, 511));
  EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 1023, 0));
  iov::iov_iter_advance(&it, 1);
  EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 511, 0));
  EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 0, 511));
  EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 0, 0));

  for (Kind k : {Kind::iovec, Kind::kvec}) {
    auto v = k == Kind::iovec ? Layout::make_iovec({{512, 0}, {1024, 512}}) : Layout::make_kvec({{512, 0}, {1024, 512}});
    it = v->iter(iov::ITER_DEST);
    EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 511, 511));
    EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 1023, 511));  // segment 1 starts at 512
    iov::iov_iter_truncate(&it, 600);  // 88 bytes of segment 1
    EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 511, 511));
    EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 7, 7));
    // The kernel checks the address of an empty segment it passes, too.
    auto z = k == Kind::iovec ? Layout::make_iovec({{512, 0}, {0, 3}, {512, 0}})
                              : Layout::make_kvec({{512, 0}, {0, 3}, {512, 0}});
    it = z->iter(iov::ITER_DEST);
    EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 511, 511));
    EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 0, 511));
  }

  auto b = Layout::make_bvec({{1024, 512}, {512, 0}});
  it = b->iter(iov::ITER_DEST);
  EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 511, 511));
  EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 1023, 511));
  iov::iov_iter_advance(&it, 512);  // 512 left in bvec 0, at page offset 1024
  EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 1023, 511));
  iov::iov_iter_advance(&it, 8);  // page offset 1032
  EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 15, 0));
  EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 7, 7));

  auto x = Layout::make_xarray(PAGE_SIZE + 512, 2048);
  it = x->iter(iov::ITER_DEST);
  EXPECT_TRUE(iov::iov_iter_is_aligned(&it, 511, 511));
  EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 1023, 511));
  iov::iov_iter_truncate(&it, 100);
  EXPECT_FALSE(iov::iov_iter_is_aligned(&it, 0, 511));

  iov::iov_iter_discard(&it, iov::ITER_DEST, 3);
  EXPECT_TRUE(iov::iov_iter_is_aligned(&it, ~0u, ~0u));
}

TEST(SaveRestore, ReturnsToTheSavedPosition) {
  for (const auto& l : iov_test::mixed_layouts(71, 5)) {
    if (l->kind() == Kind::xarray || l->kind() == Kind::discard || iov_test::queued(l->kind())) continue;
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    iov::iov_iter it = l->iter(iov::ITER_SOURCE);
    size_t pos = l->total() / 3;
    iov::iov_iter_advance(&it, pos);
    iov::iov_iter_state st;
    iov::iov_iter_save_state(&it, &st);
    EXPECT_EQ(st.iov_offset, it.iov_offset);
    EXPECT_EQ(st.count, it.count);
    EXPECT_EQ(st.nr_segs, it.nr_segs);
    iov_test::IterState saved = iov_test::state_of(it);
    std::vector<unsigned char> sink(l->total());
    iov::copy_from_iter(sink.data(), l->total(), &it);  // to the end, across all segments
    iov::iov_iter_restore(&it, &st);
    EXPECT_EQ(iov_test::state_of(it), saved);
    iov_test::expect_at(*l, it, pos, l->total() - pos);
    iov::iov_iter_truncate(&it, 1);  // restore also undoes a truncate
    iov::iov_iter_restore(&it, &st);
    EXPECT_EQ(iov_test::state_of(it), saved);
  }
}

TEST(SaveRestore, XarrayDiscardAndQueuesAreLeftAlone) {
  for (const auto& l : iov_test::edge_layouts()) {
    if (l->kind() != Kind::xarray && l->kind() != Kind::discard && !iov_test::queued(l->kind())) continue;
    iov::iov_iter it = l->iter(iov::ITER_DEST);
    iov::iov_iter_state st;
    iov::iov_iter_save_state(&it, &st);
    iov::iov_iter_advance(&it, l->total() / 2);
    iov_test::IterState moved = iov_test::state_of(it);
    iov::iov_iter_restore(&it, &st);
    EXPECT_EQ(iov_test::state_of(it), moved);
  }
}

}  // namespace

// iov_iter_to_iovecs: the walk's pieces as iovecs, touching ones merged, the
// iterator left where it was; checked against the flat copy of the same bytes.
namespace {
std::vector<char> gather(const ::iovec* v, unsigned n) {
  std::vector<char> out;
  for (unsigned k = 0; k < n; k++)
    out.insert(out.end(), static_cast<char*>(v[k].iov_base), static_cast<char*>(v[k].iov_base) + v[k].iov_len);
  return out;
}
}  // namespace

TEST(IovIterToIovecs, BvecOfContiguousFramesIsOneIovecAndLimitsHold) {
  iov::page* pg = iov::alloc_pages(iov::GFP_KERNEL, 2);
  ASSERT_NE(pg, nullptr);
  char* mem = static_cast<char*>(iov::page_address(pg));
  for (size_t k = 0; k < 4 * iov::PAGE_SIZE; k++) mem[k] = static_cast<char>(k * 7 + 1);
  iov::bio_vec bv[3];
  iov::bvec_set_page(&bv[0], pg, 3 * iov::PAGE_SIZE, 0);          // three frames: one iovec
  iov::bvec_set_page(&bv[1], pg + 3, 0, 0);                        // empty: left out
  iov::bvec_set_page(&bv[2], pg + 3, 100, 200);                    // does not touch: a second one
  iov::iov_iter it;
  iov::iov_iter_bvec(&it, iov::ITER_SOURCE, bv, 3, 3 * iov::PAGE_SIZE + 100);
  iov::iov_iter_advance(&it, 10);
  const iov::iov_iter before = it;

  ::iovec v[4];
  size_t bytes = 0;
  unsigned n = iov::iov_iter_to_iovecs(&it, v, 4, SIZE_MAX, &bytes);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(bytes, 3 * iov::PAGE_SIZE + 90);
  EXPECT_EQ(v[0].iov_base, mem + 10);
  EXPECT_EQ(v[0].iov_len, 3 * iov::PAGE_SIZE - 10);
  EXPECT_EQ(v[1].iov_base, mem + 3 * iov::PAGE_SIZE + 200);
  std::vector<char> flat(bytes);
  iov::iov_iter copy = it;
  ASSERT_EQ(iov::copy_from_iter(flat.data(), bytes, &copy), bytes);
  EXPECT_EQ(gather(v, n), flat);
  EXPECT_EQ(std::memcmp(&it, &before, sizeof it), 0);  // not advanced

  n = iov::iov_iter_to_iovecs(&it, v, 1, SIZE_MAX, &bytes);  // one entry: the first run only
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(bytes, 3 * iov::PAGE_SIZE - 10);
  n = iov::iov_iter_to_iovecs(&it, v, 4, 5000, &bytes);  // a byte limit cuts the first run
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(bytes, 5000u);
  EXPECT_EQ(v[0].iov_len, 5000u);
  iov::free_pages(pg, 2);
}

TEST(IovIterToIovecs, IovecKvecUbufAndDiscard) {
  char a[10], b[20];
  ::iovec segs[] = {{a, 10}, {nullptr, 0}, {b, 20}};
  iov::iov_iter it;
  iov::iov_iter_init(&it, iov::ITER_DEST, segs, 3, 30);
  ::iovec v[4];
  size_t bytes = 0;
  EXPECT_EQ(iov::iov_iter_to_iovecs(&it, v, 4, SIZE_MAX, &bytes), 2u);
  EXPECT_EQ(bytes, 30u);
  EXPECT_EQ(v[1].iov_base, b);
  iov::kvec kv[] = {{a, 10}, {b, 20}};
  iov::iov_iter_kvec(&it, iov::ITER_DEST, kv, 2, 25);  // count cuts the second
  EXPECT_EQ(iov::iov_iter_to_iovecs(&it, v, 4, SIZE_MAX, &bytes), 2u);
  EXPECT_EQ(v[1].iov_len, 15u);
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, a, 10);
  EXPECT_EQ(iov::iov_iter_to_iovecs(&it, v, 4, SIZE_MAX, &bytes), 1u);
  EXPECT_EQ(bytes, 10u);
  iov::iov_iter_discard(&it, iov::ITER_DEST, 100);
  EXPECT_EQ(iov::iov_iter_to_iovecs(&it, v, 4, SIZE_MAX, &bytes), 0u);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(iov::iov_iter_to_iovecs(&it, v, 0, SIZE_MAX, &bytes), 0u);
}
