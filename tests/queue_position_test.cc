// queue_position_test.cc: the position operations of the queue iterators
// (ITER_BVECQ as posted in "[PATCH v4 15/30] iov_iter: Add a segmented queue
// of bio_vec[]", ITER_FOLIOQ as in mainline), against hand-computed results and the flat model: advance
// and revert across segments and empty ones, npages, alignment, the
// single-segment count, reexpand and the no-op restore.
//
//   ctest -R queue_position_test
#include <algorithm>
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

// Where the iterator stands: its flat segment index and the offset into it.
std::pair<size_t, size_t> stand(const Layout& l, const iov::iov_iter& it) {
  if (it.type == iov::ITER_FOLIOQ) return {l.flat_slot(it.folioq, it.folioq_slot), it.iov_offset};
  return {l.flat_slot(it.bvecq, it.bvecq_slot), it.iov_offset};
}

std::vector<std::unique_ptr<Layout>> layouts_of(Kind k, uint64_t seed) {
  std::vector<std::unique_ptr<Layout>> v;
  for (auto& l : iov_test::mixed_layouts(seed, 12))
    if (l->kind() == k) v.push_back(std::move(l));
  return v;
}

// Three segments: {A: 100 B: 0} {} {C: PAGE_SIZE at 0, D: 50 at 4000}.
std::unique_ptr<Layout> three_segments() {
  auto l = Layout::make_bvecq({{100, 10}, {0, 5}, {PAGE_SIZE, 0}, {50, 4000}}, {2, 0, 2});
  l->fill(7);
  return l;
}

TEST(BvecqAdvance, AcrossSegmentsAsThePosting) {
  auto l = three_segments();
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 99);
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{0}, size_t{99}));
  // Exhausting A stops on the next slot (the empty B), with nothing left of
  // `by` to step further: the loop runs while bytes remain.
  iov::iov_iter_advance(&it, 1);
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{1}, size_t{0}));
  EXPECT_EQ(it.bvecq, l->slot_home(1).first);
  iov::iov_iter_advance(&it, PAGE_SIZE + 10);  // over B and the empty segment into D
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{3}, size_t{10}));
  EXPECT_EQ(it.bvecq, l->slot_home(3).first);
  EXPECT_EQ(it.count, 40u);
  iov::iov_iter_advance(&it, SIZE_MAX);  // clamped to the count
  EXPECT_EQ(it.count, 0u);
  iov_test::IterState end = iov_test::state_of(it);
  iov::iov_iter_advance(&it, 5);  // nothing left: a no-op
  EXPECT_EQ(iov_test::state_of(it), end);
}

// An advance by 0 makes one step of the posting's loop: over one empty slot,
// or from the end of a segment into the next; never more.
TEST(BvecqAdvance, ZeroMakesOneStep) {
  auto empty_first = Layout::make_bvecq({{0, 0}, {0, 0}, {10, 0}}, {3});
  iov::iov_iter it = empty_first->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 0);
  EXPECT_EQ(stand(*empty_first, it).first, 1u);
  auto empty_head = Layout::make_bvecq({{0, 0}, {10, 0}}, {0, 2});
  it = empty_head->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 0);
  EXPECT_EQ(it.bvecq, empty_head->slot_home(0).first);
  EXPECT_EQ(it.bvecq_slot, 0u) << "moved into the next segment, not past its empty slot";
  auto nonempty = Layout::make_bvecq({{10, 0}});
  it = nonempty->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 0);
  EXPECT_EQ(stand(*nonempty, it), std::make_pair(size_t{0}, size_t{0}));
}

TEST(BvecqRevert, ThroughPrevAsThePosting) {
  auto l = three_segments();
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 100 + PAGE_SIZE + 20);
  ASSERT_EQ(stand(*l, it), std::make_pair(size_t{3}, size_t{20}));
  iov::iov_iter_revert(&it, 20);  // within the slot
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{3}, size_t{0}));
  iov::iov_iter_revert(&it, 1);  // into C
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{2}, PAGE_SIZE - 1));
  iov::iov_iter_revert(&it, PAGE_SIZE);  // over C, the empty segment and B into A
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{0}, size_t{99}));
  EXPECT_EQ(it.bvecq, l->bvecq_head());
  EXPECT_EQ(it.count, 100u + PAGE_SIZE + 50 - 99);
  iov_test::expect_at(*l, it, 99, it.count);
}

// Pages the iterator's count spans, slot by slot from where it stands, from
// the slots' addresses: a slot with bytes counts the pages they touch, one
// with none counts a page if it starts inside one (the posting's
// DIV_ROUND_UP(offset + 0, PAGE_SIZE)).
int model_npages(const Layout& l, const iov::iov_iter& it) {
  auto [slot, skip] = stand(l, it);
  size_t size = it.count, n = 0;
  for (; slot < l.nr_segs() && size; slot++, skip = 0) {
    const Chunk& c = l.runs()[slot];
    size_t part = std::min(c.len - skip, size);
    uintptr_t first = reinterpret_cast<uintptr_t>(c.base + skip);
    n += part ? (first + part - 1) / PAGE_SIZE - first / PAGE_SIZE + 1 : first % PAGE_SIZE != 0;
    size -= part;
  }
  return static_cast<int>(n);
}

TEST(BvecqNpages, FollowsTheModelWithCaps) {
  for (const auto& l : layouts_of(Kind::bvecq, 51)) {
    for (size_t pos : {size_t{0}, size_t{1}, l->total() / 2}) {
      if (pos > l->total()) continue;
      for (size_t count : {l->total() - pos, (l->total() - pos) / 3}) {
        iov::iov_iter it = l->iter(iov::ITER_SOURCE);
        iov::iov_iter_advance(&it, pos);
        iov::iov_iter_truncate(&it, count);
        int want = count ? model_npages(*l, it) : 0;
        EXPECT_EQ(iov::iov_iter_npages(&it, INT_MAX), want) << "pos " << pos << " count " << count;
        for (int cap : {1, 2, want - 1, want, want + 1})
          if (cap > 0) {
            EXPECT_EQ(iov::iov_iter_npages(&it, cap), std::min(want, cap)) << "cap " << cap;
          }
      }
    }
  }
}

TEST(BvecqAlignment, OffsetsAndPartsOfEverySlot) {
  for (const auto& l : layouts_of(Kind::bvecq, 61)) {
    for (size_t pos : {size_t{0}, l->total() / 3}) {
      iov::iov_iter it = l->iter(iov::ITER_DEST);
      iov::iov_iter_advance(&it, pos);
      auto [slot, skip] = stand(*l, it);
      unsigned long want = 0;
      bool aligned512 = true;
      for (size_t size = it.count; slot < l->nr_segs() && size; slot++, skip = 0) {
        size_t part = std::min(l->runs()[slot].len - skip, size);
        unsigned long start = l->bvecs()[slot].bv_offset + skip;
        want |= start | part;
        aligned512 = aligned512 && !(start & 511) && !(part & 511);
        size -= part;
      }
      EXPECT_EQ(iov::iov_iter_alignment(&it), it.count ? want : 0) << "pos " << pos;
      EXPECT_EQ(iov::iov_iter_is_aligned(&it, 511, 511), aligned512) << "pos " << pos;
    }
  }
}

TEST(BvecqSingleSegCount, WhatIsLeftOfTheSlot) {
  auto l = three_segments();
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 100u);
  iov::iov_iter_advance(&it, 30);
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 70u);
  iov::iov_iter_advance(&it, 70);  // on the empty B
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 0u);
  iov::iov_iter_advance(&it, PAGE_SIZE);  // into D
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 50u);
  iov::iov_iter_truncate(&it, 7);
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 7u);
  // Past the end of a segment (where an advance leaves it): the next
  // segment's first slot. A walk that ends a slot stays on it, at its end.
  auto two = Layout::make_bvecq({{10, 0}, {20, 0}}, {1, 1});
  it = two->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 10);
  EXPECT_EQ(it.bvecq_slot, 1u);
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 20u);
  it = two->iter(iov::ITER_SOURCE);
  std::vector<unsigned char> sink(10);
  ASSERT_EQ(iov::copy_from_iter(sink.data(), 10, &it), 10u);
  EXPECT_EQ(stand(*two, it), std::make_pair(size_t{0}, size_t{10}));
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 0u);
}

// ---- ITER_FOLIOQ ----

// Segment 1: 29 fillers behind the start, then F0 (order 1) and F1 (order 0);
// segment 2: F2 (order 2). The iterator starts 100 bytes into F0.
std::unique_ptr<Layout> two_segments() {
  auto l = Layout::make_folioq({1, 0, 2}, 29, 100);
  l->fill(9);
  return l;
}

TEST(FolioqAdvance, AcrossSegmentsAsTheKernel) {
  auto l = two_segments();
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  EXPECT_EQ(it.folioq_slot, 29u);
  iov::iov_iter_advance(&it, 2 * PAGE_SIZE - 101);
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{0}, 2 * PAGE_SIZE - 1));
  iov::iov_iter_advance(&it, 1);  // F0 done: on F1, slot 30
  EXPECT_EQ(it.folioq_slot, 30u);
  EXPECT_EQ(it.iov_offset, 0u);
  iov::iov_iter_advance(&it, PAGE_SIZE);  // F1 done: slot 31 is past the segment, so the next one's slot 0
  EXPECT_EQ(it.folioq, l->slot_home(2).first);
  EXPECT_EQ(it.folioq_slot, 0u);
  iov::iov_iter_advance(&it, 5);
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{2}, size_t{5}));
  iov_test::expect_at(*l, it, 3 * PAGE_SIZE - 100 + 5, l->total() - (3 * PAGE_SIZE - 100 + 5));
}

TEST(FolioqRevert, ThroughPrevAsTheKernel) {
  auto l = two_segments();
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 3 * PAGE_SIZE - 100 + 5);  // 5 bytes into F2
  iov::iov_iter_revert(&it, 6);                           // the last byte of F1
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{1}, PAGE_SIZE - 1));
  EXPECT_EQ(it.folioq, l->folioq_head());
  iov::iov_iter_revert(&it, PAGE_SIZE);  // into F0
  EXPECT_EQ(stand(*l, it), std::make_pair(size_t{0}, 2 * PAGE_SIZE - 1));
  // Behind the start, the fillers: the kernel's revert goes there too.
  iov::iov_iter_revert(&it, 2 * PAGE_SIZE);
  EXPECT_EQ(it.folioq_slot, 28u);
  EXPECT_EQ(it.iov_offset, PAGE_SIZE - 1);
  // (Past the head of the queue: checks_death_test's RevertPastTheStart.)
}

// npages and alignment see whole folios: the pages the count touches from
// where it stands, and the offset into the folio ORed with the count.
TEST(FolioqNpagesAlignment, FollowTheModel) {
  for (const auto& l : layouts_of(Kind::folioq, 52)) {
    for (size_t pos : {size_t{0}, size_t{1}, l->total() / 2}) {
      if (pos >= l->total()) continue;
      for (size_t count : {l->total() - pos, (l->total() - pos) / 3 + 1}) {
        iov::iov_iter it = l->iter(iov::ITER_SOURCE);
        iov::iov_iter_advance(&it, pos);
        iov::iov_iter_truncate(&it, count);
        int pages = 0;
        for (const Chunk& c : l->runs()) {
          size_t a = std::max(pos, c.flat), b = std::min(pos + count, c.flat + c.len);
          if (a >= b) continue;
          uintptr_t first = reinterpret_cast<uintptr_t>(c.base + (a - c.flat)), last = first + (b - a) - 1;
          pages += static_cast<int>(last / PAGE_SIZE - first / PAGE_SIZE + 1);
        }
        EXPECT_EQ(iov::iov_iter_npages(&it, INT_MAX), pages) << "pos " << pos << " count " << count;
        EXPECT_EQ(iov::iov_iter_npages(&it, 1), 1);
        size_t seg = stand(*l, it).first;
        auto folio_off = static_cast<unsigned long>(l->addr(pos) - static_cast<unsigned char*>(
                                                                       iov::folio_address(l->folio_of(seg))));
        EXPECT_EQ(iov::iov_iter_alignment(&it), folio_off | count);
        EXPECT_EQ(iov::iov_iter_is_aligned(&it, 511, 511), !(folio_off & 511) && !(count & 511));
      }
    }
  }
}

TEST(FolioqSingleSegCount, TheFolioSizeAsTheKernel) {
  auto l = two_segments();
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 2 * PAGE_SIZE) << "the whole folio, offset or not";
  iov::iov_iter_advance(&it, 2 * PAGE_SIZE - 100);
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), PAGE_SIZE);
  iov::iov_iter_truncate(&it, 10);
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 10u);
  auto past = Layout::make_folioq({2}, 31);  // on slot 31: the next segment's first folio
  it = past->iter(iov::ITER_SOURCE);
  EXPECT_EQ(iov::iov_iter_single_seg_count(&it), 4 * PAGE_SIZE);
}

// ---- Both queues ----

// What the two queue types share, case for case: where the randomized
// layouts come from, a fixed layout, and how far to move before a restore.
struct queue_case {
  Kind kind;
  uint64_t revert_seeds[2];
  std::unique_ptr<Layout> (*fixed)();
  size_t restore_step;
};

class QueuePosition : public testing::TestWithParam<queue_case> {};

TEST_P(QueuePosition, RevertUndoesAnyAdvanceOrWalk) {
  const queue_case& q = GetParam();
  for (uint64_t seed : iov_test::test_seeds({q.revert_seeds[0], q.revert_seeds[1]})) {
    std::mt19937_64 rng(seed);
    for (const auto& l : layouts_of(q.kind, seed)) {
      for (int trial = 0; trial < 20; trial++) {
        size_t a = std::uniform_int_distribution<size_t>(0, l->total())(rng);
        size_t b = std::uniform_int_distribution<size_t>(0, a)(rng);
        iov::iov_iter it = l->iter(iov::ITER_SOURCE);
        std::vector<unsigned char> sink(a);
        if (trial % 2) iov::iov_iter_advance(&it, a);
        else ASSERT_EQ(iov::copy_from_iter(sink.data(), a, &it), a);
        iov::iov_iter_revert(&it, b);
        iov_test::expect_at(*l, it, a - b, l->total() - a + b);
        std::vector<unsigned char> got(l->total() - (a - b)), flat = l->gather();
        EXPECT_EQ(iov::copy_from_iter(got.data(), got.size(), &it), got.size());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), flat.begin() + (a - b))) << "a " << a << " b " << b;
      }
    }
  }
}

// Reexpand stays within what the queue holds; restore is a no-op (the
// kernel warns and does nothing).
TEST_P(QueuePosition, ReexpandAndRestore) {
  auto l = GetParam().fixed();
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::iov_iter_advance(&it, 50);
  iov::iov_iter_truncate(&it, 1);
  iov::iov_iter_reexpand(&it, l->total() - 50);
  EXPECT_EQ(it.count, l->total() - 50);
  iov_test::expect_at(*l, it, 50, l->total() - 50);
  iov::iov_iter_state st;
  iov::iov_iter_save_state(&it, &st);
  iov::iov_iter_advance(&it, GetParam().restore_step);
  iov_test::IterState moved = iov_test::state_of(it);
  iov::iov_iter_restore(&it, &st);
  EXPECT_EQ(iov_test::state_of(it), moved);
}

INSTANTIATE_TEST_SUITE_P(Queues, QueuePosition,
                         testing::Values(queue_case{Kind::bvecq, {31, 32}, three_segments, 150},
                                         queue_case{Kind::folioq, {33, 34}, two_segments, PAGE_SIZE}),
                         [](const testing::TestParamInfo<queue_case>& p) { return iov_test::kind_name(p.param.kind); });

// folio_queue.h's helpers.
TEST(FolioQueue, AppendMarksAndClear) {
  iov::folio_queue fq{};
  iov::folioq_init(&fq, 7);
  EXPECT_EQ(fq.rreq_id, 7u);
  EXPECT_EQ(iov::folioq_nr_slots(&fq), 31u);
  EXPECT_EQ(iov::folioq_count(&fq), 0u);
  iov::folio* f0 = iov::folio_alloc(iov::GFP_KERNEL, 0);
  iov::folio* f2 = iov::folio_alloc(iov::GFP_KERNEL, 2);
  EXPECT_EQ(iov::folioq_append(&fq, f0), 0u);
  EXPECT_EQ(iov::folioq_append_mark(&fq, f2), 1u);
  EXPECT_EQ(iov::folioq_count(&fq), 2u);
  EXPECT_EQ(iov::folioq_folio(&fq, 1), f2);
  EXPECT_EQ(iov::folioq_folio_order(&fq, 1), 2u);
  EXPECT_EQ(iov::folioq_folio_size(&fq, 1), 4 * PAGE_SIZE);
  EXPECT_FALSE(iov::folioq_is_marked(&fq, 0));
  EXPECT_TRUE(iov::folioq_is_marked(&fq, 1));
  iov::folioq_mark2(&fq, 0);
  EXPECT_TRUE(iov::folioq_is_marked2(&fq, 0));
  EXPECT_FALSE(iov::folioq_is_marked2(&fq, 1));
  iov::folioq_unmark2(&fq, 0);
  EXPECT_FALSE(iov::folioq_is_marked2(&fq, 0));
  iov::folioq_mark2(&fq, 1);
  iov::folioq_clear(&fq, 1);
  EXPECT_EQ(iov::folioq_folio(&fq, 1), nullptr);
  EXPECT_FALSE(iov::folioq_is_marked(&fq, 1));
  EXPECT_FALSE(iov::folioq_is_marked2(&fq, 1));
  EXPECT_EQ(iov::folioq_count(&fq), 2u) << "clearing leaves the count";
  for (unsigned k = 2; k < 31; k++) {
    EXPECT_FALSE(iov::folioq_full(&fq));
    iov::folioq_append(&fq, f0);
  }
  EXPECT_TRUE(iov::folioq_full(&fq));
  iov::folio_put(f0);
  iov::folio_put(f2);
}

}  // namespace
