// xarray_test.cc: the xarray against a std::map model, single-threaded:
// random store/erase/load over sparse 64-bit and dense indices, the ends of
// the index range, ordered walks, height growth and shrink, node reclamation,
// and out-of-memory stores that must leave the array unchanged.
//
//   ctest -R xarray_test
#include "iov/xarray.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "iov/rcu.hpp"

namespace {

using Model = std::map<unsigned long, void*>;

// Every entry of the array, in index order, through xa_for_each.
Model contents(iov::xarray* xa) {
  Model out;
  unsigned long index;
  void* entry;
  unsigned long prev = 0;
  bool first = true;
  xa_for_each(xa, index, entry) {
    EXPECT_TRUE(first || index > prev) << "walk out of order at " << index;
    first = false;
    prev = index;
    out[index] = entry;
  }
  return out;
}

void expect_matches(iov::xarray* xa, const Model& model) {
  EXPECT_EQ(contents(xa), model);
  EXPECT_EQ(iov::xa_count(xa), model.size());
  EXPECT_EQ(iov::xa_empty(xa), model.empty());
  for (const auto& [index, entry] : model) EXPECT_EQ(iov::xa_load(xa, index), entry) << index;
}

// Value entries stand for pointers: the xarray never dereferences entries.
void* value(unsigned long v) { return iov::xa_mk_value(v & (ULONG_MAX >> 1)); }

class XarrayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    iov::rcu_barrier();
    nodes_before_ = iov::internal::xa_nodes_allocated();
  }
  // Every node the array allocated is freed once the deferred frees have run.
  void TearDown() override {
    iov::internal::xa_fail_next_alloc(0);
    iov::xa_destroy(&xa_);
    iov::rcu_barrier();
    EXPECT_EQ(iov::internal::xa_nodes_allocated(), nodes_before_);
  }
  iov::xarray xa_;
  long nodes_before_ = 0;
};

TEST_F(XarrayTest, EmptyArrayHasNothing) {
  EXPECT_TRUE(iov::xa_empty(&xa_));
  EXPECT_EQ(iov::xa_count(&xa_), 0u);
  for (unsigned long index : {0UL, 1UL, 63UL, 64UL, 1UL << 40, ULONG_MAX})
    EXPECT_EQ(iov::xa_load(&xa_, index), nullptr);
  unsigned long index = 0;
  EXPECT_EQ(iov::xa_find(&xa_, &index, ULONG_MAX), nullptr);
  EXPECT_EQ(index, 0u);
  EXPECT_EQ(iov::xa_erase(&xa_, 5), nullptr);
}

TEST_F(XarrayTest, IndexZeroAndUlongMax) {
  int a, b;
  EXPECT_EQ(iov::xa_store(&xa_, ULONG_MAX, &a), nullptr);
  EXPECT_EQ(iov::xa_store(&xa_, 0, &b), nullptr);
  EXPECT_EQ(iov::xa_load(&xa_, ULONG_MAX), &a);
  EXPECT_EQ(iov::xa_load(&xa_, 0), &b);
  EXPECT_EQ(iov::xa_load(&xa_, ULONG_MAX - 1), nullptr);
  EXPECT_EQ(iov::xa_load(&xa_, 1), nullptr);
  EXPECT_EQ(iov::xa_load(&xa_, 1UL << 63), nullptr);
  expect_matches(&xa_, Model{{0, &b}, {ULONG_MAX, &a}});
  // Nothing comes after ULONG_MAX.
  unsigned long index = ULONG_MAX;
  EXPECT_EQ(iov::xa_find_after(&xa_, &index, ULONG_MAX), nullptr);
  EXPECT_EQ(index, ULONG_MAX);
  EXPECT_EQ(iov::xa_erase(&xa_, 0), &b);
  EXPECT_EQ(iov::xa_load(&xa_, ULONG_MAX), &a);
  EXPECT_EQ(iov::xa_erase(&xa_, ULONG_MAX), &a);
  EXPECT_TRUE(iov::xa_empty(&xa_));
}

TEST_F(XarrayTest, StoreReturnsOldAndNullErases) {
  int a, b;
  EXPECT_EQ(iov::xa_store(&xa_, 7, &a), nullptr);
  EXPECT_EQ(iov::xa_store(&xa_, 7, &b), &a);
  EXPECT_EQ(iov::xa_load(&xa_, 7), &b);
  EXPECT_EQ(iov::xa_count(&xa_), 1u);
  EXPECT_EQ(iov::xa_store(&xa_, 7, nullptr), &b);
  EXPECT_EQ(iov::xa_load(&xa_, 7), nullptr);
  EXPECT_TRUE(iov::xa_empty(&xa_));
  EXPECT_EQ(iov::xa_store(&xa_, 7, nullptr), nullptr);
  EXPECT_EQ(iov::xa_store(&xa_, 9, &a), nullptr);
  EXPECT_EQ(iov::xa_erase(&xa_, 9), &a);
  EXPECT_EQ(iov::xa_erase(&xa_, 9), nullptr);
}

TEST_F(XarrayTest, ValueEntriesRoundTrip) {
  for (unsigned long v : {0UL, 1UL, 12345UL, ULONG_MAX >> 1}) {
    void* e = iov::xa_mk_value(v);
    EXPECT_TRUE(iov::xa_is_value(e));
    EXPECT_FALSE(iov::xa_is_err(e));
    EXPECT_EQ(iov::xa_store(&xa_, v, e), nullptr);
    EXPECT_EQ(iov::xa_to_value(iov::xa_load(&xa_, v)), v);
  }
}

TEST_F(XarrayTest, InternalEntryIsRefused) {
  int a;
  iov::xa_store(&xa_, 3, &a);
  void* r = iov::xa_store(&xa_, 3, iov::xa_mk_internal(5));
  EXPECT_TRUE(iov::xa_is_err(r));
  EXPECT_EQ(iov::xa_err(r), -EINVAL);
  EXPECT_EQ(iov::xa_load(&xa_, 3), &a);
  EXPECT_EQ(iov::xa_err(&a), 0);
  EXPECT_EQ(iov::xa_err(nullptr), 0);
}

TEST_F(XarrayTest, CmpxchgAndInsert) {
  int a, b, c;
  EXPECT_EQ(iov::xa_insert(&xa_, 4, &a), 0);
  EXPECT_EQ(iov::xa_insert(&xa_, 4, &b), -EBUSY);
  EXPECT_EQ(iov::xa_load(&xa_, 4), &a);
  EXPECT_EQ(iov::xa_cmpxchg(&xa_, 4, &b, &c), &a);  // mismatch: unchanged
  EXPECT_EQ(iov::xa_load(&xa_, 4), &a);
  EXPECT_EQ(iov::xa_cmpxchg(&xa_, 4, &a, &c), &a);
  EXPECT_EQ(iov::xa_load(&xa_, 4), &c);
  EXPECT_EQ(iov::xa_cmpxchg(&xa_, 4, &c, nullptr), &c);  // erases
  EXPECT_TRUE(iov::xa_empty(&xa_));
  EXPECT_EQ(iov::xa_cmpxchg(&xa_, 1UL << 50, nullptr, &b), nullptr);
  EXPECT_EQ(iov::xa_load(&xa_, 1UL << 50), &b);
}

// Random operations over the given index source, checked against the model
// after every step and as a whole every few hundred steps.
template <class NextIndex>
void run_against_model(iov::xarray* xa, std::mt19937_64& rng, int steps, NextIndex next_index) {
  Model model;
  for (int step = 0; step < steps; step++) {
    unsigned long index = next_index();
    auto it = model.find(index);
    void* expected_old = it == model.end() ? nullptr : it->second;
    switch (rng() % 4) {
      case 0:
      case 1: {
        void* entry = value(rng());
        ASSERT_EQ(iov::xa_store(xa, index, entry), expected_old) << index;
        model[index] = entry;
        break;
      }
      case 2:
        ASSERT_EQ(iov::xa_erase(xa, index), expected_old) << index;
        model.erase(index);
        break;
      default:
        ASSERT_EQ(iov::xa_load(xa, index), expected_old) << index;
    }
    if (step % 500 == 0) expect_matches(xa, model);
  }
  expect_matches(xa, model);
  // Drain it through erase, so the empty-node path runs for every node.
  for (const auto& [index, entry] : model) ASSERT_EQ(iov::xa_erase(xa, index), entry);
  EXPECT_TRUE(iov::xa_empty(xa));
}

TEST_F(XarrayTest, RandomSparseIndicesMatchModel) {
  std::mt19937_64 rng(1);
  std::vector<unsigned long> used;
  run_against_model(&xa_, rng, 20000, [&] {
    // Reuse an index half the time, so replace and erase hit present entries;
    // new ones are random 64-bit, or neighbours of used ones to share nodes.
    if (!used.empty() && rng() % 2) return used[rng() % used.size()];
    unsigned long index = rng() % 3 == 0 && !used.empty() ? used[rng() % used.size()] + rng() % 130 : rng();
    used.push_back(index);
    return index;
  });
}

TEST_F(XarrayTest, RandomDenseIndicesMatchModel) {
  std::mt19937_64 rng(2);
  run_against_model(&xa_, rng, 30000, [&] { return rng() % 5000; });
}

TEST_F(XarrayTest, HeightGrowsAndShrinks) {
  int far, near;
  ASSERT_EQ(iov::xa_store(&xa_, 1UL << 40, &far), nullptr);
  for (unsigned long index = 0; index < 300; index++) EXPECT_EQ(iov::xa_load(&xa_, index), nullptr);
  EXPECT_EQ(iov::xa_load(&xa_, (1UL << 40) - 1), nullptr);
  EXPECT_EQ(iov::xa_load(&xa_, (1UL << 40) + 1), nullptr);
  EXPECT_EQ(iov::xa_load(&xa_, 1UL << 41), nullptr);
  ASSERT_EQ(iov::xa_store(&xa_, 5, &near), nullptr);
  EXPECT_EQ(iov::xa_load(&xa_, 5), &near);
  EXPECT_EQ(iov::xa_load(&xa_, 1UL << 40), &far);

  // A path to 2^40 takes 7 levels; with index 5 beside it, 7 + 6 nodes.
  iov::rcu_barrier();
  EXPECT_EQ(iov::internal::xa_nodes_allocated() - nodes_before_, 13);
  // Erasing the far entry frees its path and shrinks the tree to one leaf.
  EXPECT_EQ(iov::xa_erase(&xa_, 1UL << 40), &far);
  iov::rcu_barrier();
  EXPECT_EQ(iov::internal::xa_nodes_allocated() - nodes_before_, 1);
  EXPECT_EQ(iov::xa_load(&xa_, 5), &near);
  expect_matches(&xa_, Model{{5, &near}});
  // And it grows again.
  ASSERT_EQ(iov::xa_store(&xa_, ULONG_MAX, &far), nullptr);
  expect_matches(&xa_, Model{{5, &near}, {ULONG_MAX, &far}});
}

TEST_F(XarrayTest, DestroyEmptiesAndStaysUsable) {
  int a;
  for (unsigned long index = 0; index < 1000; index += 3) iov::xa_store(&xa_, index * 977, &a);
  iov::xa_destroy(&xa_);
  EXPECT_TRUE(iov::xa_empty(&xa_));
  EXPECT_EQ(iov::xa_count(&xa_), 0u);
  EXPECT_EQ(iov::xa_load(&xa_, 3 * 977), nullptr);
  EXPECT_EQ(iov::xa_store(&xa_, 3, &a), nullptr);
  expect_matches(&xa_, Model{{3, &a}});
  iov::xa_init(&xa_);  // on a used array: empties it too
  EXPECT_TRUE(iov::xa_empty(&xa_));
  iov::xa_destroy(&xa_);
  iov::xa_destroy(&xa_);
}

TEST_F(XarrayTest, DestructorFreesNodes) {
  {
    iov::xarray local;
    for (unsigned long index = 0; index < 5000; index += 7) iov::xa_store(&local, index << 20, &local);
    EXPECT_GT(iov::internal::xa_nodes_allocated(), nodes_before_);
  }
  EXPECT_EQ(iov::internal::xa_nodes_allocated(), nodes_before_);
}

TEST_F(XarrayTest, FindHonoursBoundsAndOrder) {
  Model model;
  std::mt19937_64 rng(3);
  for (int k = 0; k < 300; k++) {
    unsigned long index = k % 2 ? rng() : rng() % 4096;
    model[index] = value(index);
    iov::xa_store(&xa_, index, value(index));
  }
  for (int probe = 0; probe < 300; probe++) {
    unsigned long from = probe % 2 ? rng() : rng() % 4096;
    unsigned long span = rng() % 5000;
    unsigned long max = probe % 3 == 0 || from > ULONG_MAX - span ? ULONG_MAX : from + span;
    auto it = model.lower_bound(from);
    bool present = it != model.end() && it->first <= max;
    unsigned long index = from;
    void* entry = iov::xa_find(&xa_, &index, max);
    ASSERT_EQ(entry, present ? it->second : nullptr) << from << ".." << max;
    EXPECT_EQ(index, present ? it->first : from);

    auto after = model.upper_bound(from);
    bool after_present = from != ULONG_MAX && after != model.end() && after->first <= max;
    index = from;
    entry = iov::xa_find_after(&xa_, &index, max);
    ASSERT_EQ(entry, after_present ? after->second : nullptr);
    EXPECT_EQ(index, after_present ? after->first : from);
  }
  // A start beyond max finds nothing; a mark filter finds nothing (no marks).
  unsigned long index = 10;
  EXPECT_EQ(iov::xa_find(&xa_, &index, 9), nullptr);
  index = 0;
  EXPECT_EQ(iov::xa_find(&xa_, &index, ULONG_MAX, 0), nullptr);
}

TEST_F(XarrayTest, RangeWalksMatchModel) {
  Model model;
  for (unsigned long index = 0; index < 700; index += 5) model[index] = value(index);
  model[1UL << 33] = value(1);
  model[ULONG_MAX] = value(2);
  for (const auto& [index, entry] : model) iov::xa_store(&xa_, index, entry);

  Model seen;
  unsigned long index;
  void* entry;
  xa_for_each_range(&xa_, index, entry, 100, 1UL << 33) seen[index] = entry;
  Model expected(model.lower_bound(100), model.upper_bound(1UL << 33));
  EXPECT_EQ(seen, expected);

  seen.clear();
  xa_for_each_start(&xa_, index, entry, 650) seen[index] = entry;
  EXPECT_EQ(seen, Model(model.lower_bound(650), model.end()));

  // The C++ walk, whole and stopped early.
  seen.clear();
  xa_.for_each([&](unsigned long i, void* e) { seen[i] = e; });
  EXPECT_EQ(seen, model);
  std::vector<unsigned long> first_three;
  xa_.for_each_range(6, ULONG_MAX, [&](unsigned long i, void*) {
    first_three.push_back(i);
    return first_three.size() < 3;
  });
  EXPECT_EQ(first_three, (std::vector<unsigned long>{10, 15, 20}));

  // A body may erase what it walks.
  xa_for_each(&xa_, index, entry) EXPECT_EQ(iov::xa_erase(&xa_, index), entry);
  EXPECT_TRUE(iov::xa_empty(&xa_));
}

// xas_load/xas_next walk consecutive indices, across leaves and from
// ULONG_MAX around to 0, and stop at the first missing index.
TEST_F(XarrayTest, XasWalkFollowsConsecutiveIndices) {
  Model model;
  for (unsigned long i = 0; i < 100; i++) model[i] = value(i);
  for (unsigned long i = 130; i < 300; i++) model[i] = value(i);
  for (unsigned long i = ULONG_MAX - 70; i != 0; i++) model[i] = value(i);
  for (unsigned long i = (1UL << 40) - 3; i < (1UL << 40) + 200; i++) model[i] = value(i);
  for (const auto& [index, entry] : model) iov::xa_store(&xa_, index, entry);

  for (unsigned long start : {0UL, 50UL, 63UL, 64UL, 99UL, 100UL, 129UL, 130UL, 255UL, ULONG_MAX - 70,
                              ULONG_MAX - 5, ULONG_MAX, (1UL << 40) - 3, (1UL << 40) - 1, 1UL << 40}) {
    std::vector<unsigned long> expected;  // the run of present indices from start
    for (unsigned long i = start; model.count(i) && expected.size() < 1000; i++) expected.push_back(i);
    std::vector<unsigned long> walked;
    iov::rcu_read_guard guard;
    XA_STATE(xas, &xa_, start);
    for (void* e = iov::xas_load(&xas); e && walked.size() < 1000; e = iov::xas_next(&xas)) {
      EXPECT_EQ(e, model[xas.xa_index]);
      walked.push_back(xas.xa_index);
    }
    EXPECT_EQ(walked, expected) << "from " << start;
    iov::xas_set(&xas, 131);
    EXPECT_EQ(iov::xas_load(&xas), value(131));
  }
}

TEST_F(XarrayTest, MemberFunctionsMirrorTheKernelLayer) {
  int a, b;
  EXPECT_TRUE(xa_.empty());
  EXPECT_EQ(xa_.store(12, &a), nullptr);
  EXPECT_EQ(xa_.store(12, &b), &a);
  EXPECT_EQ(xa_.load(12), &b);
  EXPECT_EQ(xa_.size(), 1u);
  EXPECT_EQ(xa_.erase(12), &b);
  EXPECT_TRUE(xa_.empty());
}

// A store that cannot get its nodes returns -ENOMEM and changes nothing:
// fail each allocation a store needs in turn, on trees of several shapes.
TEST_F(XarrayTest, OutOfMemoryLeavesArrayUnchanged) {
  Model model;
  for (unsigned long index = 0; index < 200; index += 9) model[index] = value(index);
  for (const auto& [index, entry] : model) iov::xa_store(&xa_, index, entry);
  iov::rcu_barrier();
  long nodes = iov::internal::xa_nodes_allocated();

  // ULONG_MAX needs 19 nodes (9 new levels above the top, then a path of 10
  // down), 2^40 needs 11, 20480 needs 3 and 4000 a single new leaf.
  for (unsigned long target : {ULONG_MAX, 1UL << 40, 4000UL, 64UL * 64 * 5}) {
    for (unsigned skip = 0;; skip++) {
      iov::internal::xa_fail_next_alloc(1, skip);
      void* r = iov::xa_store(&xa_, target, value(7));
      iov::internal::xa_fail_next_alloc(0);
      if (!iov::xa_is_err(r)) {  // skip reached past the store's needs: it went through
        EXPECT_EQ(r, nullptr);
        EXPECT_GT(skip, 0u) << "a store into a new region needs at least one node";
        EXPECT_EQ(iov::xa_erase(&xa_, target), value(7));
        break;
      }
      EXPECT_EQ(iov::xa_err(r), -ENOMEM);
      expect_matches(&xa_, model);
      EXPECT_EQ(iov::xa_load(&xa_, target), nullptr);
      EXPECT_EQ(iov::internal::xa_nodes_allocated(), nodes);  // nothing leaked or kept
      ASSERT_LT(skip, 30u);
    }
    iov::rcu_barrier();
    EXPECT_EQ(iov::internal::xa_nodes_allocated(), nodes);
  }

  // Replacing a present entry needs no node, so it cannot fail.
  iov::internal::xa_fail_next_alloc(100);
  EXPECT_EQ(iov::xa_store(&xa_, 9, value(1)), value(9));
  iov::internal::xa_fail_next_alloc(0);

  // The first store into an empty array.
  iov::xarray empty;
  iov::internal::xa_fail_next_alloc(1, 1);
  void* r = iov::xa_store(&empty, 1UL << 20, value(3));
  iov::internal::xa_fail_next_alloc(0);
  EXPECT_EQ(iov::xa_err(r), -ENOMEM);
  EXPECT_TRUE(iov::xa_empty(&empty));
  EXPECT_EQ(iov::xa_insert(&empty, 1, value(3)), 0);
}

}  // namespace
