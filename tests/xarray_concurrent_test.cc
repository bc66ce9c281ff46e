// xarray_concurrent_test.cc: lock-free readers (xa_load, ordered walks)
// against concurrent writers (store, erase, cmpxchg, destroy, growth and
// shrink of the tree). Every entry encodes the index it was stored at, so a
// reader can tell a torn or misplaced entry from a stale one; ASan catches a
// node freed before its readers left, TSan a missing ordering.
//
//   ctest --preset tsan -R xarray_concurrent
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "iov/page.hpp"
#include "iov/rcu.hpp"
#include "iov/xarray.hpp"

namespace {

using Clock = std::chrono::steady_clock;
// Each test stops its writers after this long even if they have operations
// left (sanitizer builds on a shared machine are slow); it asserts nothing on time.
constexpr auto kRunFor = std::chrono::milliseconds(500);

// Indices by slot number k: dense ones, neighbours of 2^40, the top of the
// range, and random 64-bit ones, so the tree grows to full height and back.
std::vector<unsigned long> make_indices(int n) {
  std::mt19937_64 rng(42);
  std::vector<unsigned long> out;
  for (int k = 0; k < n; k++) {
    switch (k % 4) {
      case 0: out.push_back(static_cast<unsigned long>(k)); break;
      case 1: out.push_back((1UL << 40) + k); break;
      case 2: out.push_back(ULONG_MAX - k); break;
      default: out.push_back(rng()); break;
    }
  }
  return out;
}

// Entry for slot k, version v: a value entry, so it is never dereferenced.
void* encode(unsigned long k, unsigned long v) { return iov::xa_mk_value((k << 32) | (v & 0xffffffffUL)); }
bool belongs_to(const void* entry, unsigned long k) {
  return iov::xa_is_value(entry) && (iov::xa_to_value(entry) >> 32) == k;
}

struct Shared {
  explicit Shared(int n) : indices(make_indices(n)) {
    for (size_t k = 0; k < indices.size(); k++) slot_of[indices[k]] = k;
  }
  iov::xarray xa;
  std::vector<unsigned long> indices;
  std::unordered_map<unsigned long, unsigned long> slot_of;
  std::atomic<bool> stop{false};
  std::atomic<long> checks{0};
};

void load_reader(Shared* s, unsigned seed) {
  std::mt19937 rng(seed);
  long checks = 0;
  while (!s->stop.load(std::memory_order_relaxed)) {
    // Half the batches run under one long section (xa_load then nests in it).
    std::optional<iov::rcu_read_guard> guard;
    if (rng() % 2) guard.emplace();
    if (rng() % 4 == 0) {  // a cursor walk over 64 consecutive indices around a used one
      iov::rcu_read_guard cursor_guard;  // nests in `guard` when that is held
      XA_STATE(xas, &s->xa, s->indices[rng() % s->indices.size()] - 32);
      void* e = iov::xas_load(&xas);
      for (int step = 0; step < 64; step++, e = iov::xas_next(&xas)) {
        auto it = s->slot_of.find(xas.xa_index);
        if (e && (it == s->slot_of.end() || !belongs_to(e, it->second))) {
          ADD_FAILURE() << "cursor walk found a wrong entry at " << xas.xa_index;
          s->stop = true;
        }
        checks++;
      }
    }
    for (int i = 0; i < 64; i++) {
      unsigned long k = rng() % s->indices.size();
      void* e = iov::xa_load(&s->xa, s->indices[k]);
      if (e && !belongs_to(e, k)) {
        ADD_FAILURE() << "index " << s->indices[k] << " holds an entry of slot "
                      << (iov::xa_to_value(e) >> 32);
        s->stop = true;
      }
      checks++;
    }
  }
  s->checks += checks;
}

void walk_reader(Shared* s) {
  long checks = 0;
  while (!s->stop.load(std::memory_order_relaxed)) {
    unsigned long index, prev = 0;
    void* entry;
    bool first = true;
    xa_for_each(&s->xa, index, entry) {
      auto it = s->slot_of.find(index);
      if (it == s->slot_of.end() || !belongs_to(entry, it->second) || (!first && index <= prev)) {
        ADD_FAILURE() << "walk found a wrong entry at " << index;
        s->stop = true;
        break;
      }
      first = false;
      prev = index;
      checks++;
    }
  }
  s->checks += checks;
}

// Writer w owns the slots k with k % writers == w and keeps their model.
void writer(Shared* s, unsigned w, unsigned writers, int ops, std::map<unsigned long, void*>* model) {
  std::mt19937 rng(100 + w);
  auto deadline = Clock::now() + kRunFor;
  unsigned long version = 0;
  for (int op = 0; op < ops && !s->stop.load(std::memory_order_relaxed); op++) {
    if (op % 256 == 0 && Clock::now() > deadline) break;
    unsigned long k = (rng() % (s->indices.size() / writers)) * writers + w;
    unsigned long index = s->indices[k];
    auto it = model->find(index);
    void* old = it == model->end() ? nullptr : it->second;
    void* entry = encode(k, ++version);
    switch (rng() % 5) {
      case 0:
      case 1:
        EXPECT_EQ(iov::xa_store(&s->xa, index, entry), old);
        (*model)[index] = entry;
        break;
      case 2:
      case 3:
        EXPECT_EQ(iov::xa_erase(&s->xa, index), old);
        model->erase(index);
        break;
      default:
        EXPECT_EQ(iov::xa_cmpxchg(&s->xa, index, old, entry), old);
        (*model)[index] = entry;
    }
  }
}

TEST(XarrayConcurrent, ReadersSeeOnlyWhatWasStoredAtTheirIndex) {
  Shared s(4096);
  constexpr unsigned kWriters = 2;
  std::map<unsigned long, void*> models[kWriters];
  std::vector<std::thread> readers;
  readers.emplace_back(load_reader, &s, 1);
  readers.emplace_back(load_reader, &s, 2);
  readers.emplace_back(walk_reader, &s);
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < kWriters; w++) writers.emplace_back(writer, &s, w, kWriters, 40000, &models[w]);
  for (auto& t : writers) t.join();
  s.stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(s.checks.load(), 0);

  // The writers' stores all landed: the array is the union of their models.
  std::map<unsigned long, void*> expected;
  for (auto& m : models) expected.insert(m.begin(), m.end());
  std::map<unsigned long, void*> actual;
  unsigned long index;
  void* entry;
  xa_for_each(&s.xa, index, entry) actual[index] = entry;
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(iov::xa_count(&s.xa), expected.size());
  iov::xa_destroy(&s.xa);
  iov::rcu_barrier();
}

// Entries that never change stay visible while the tree above them grows to
// full height and shrinks back, and while neighbours come and go.
TEST(XarrayConcurrent, GrowthAndShrinkNeverHidePresentEntries) {
  iov::xarray xa;
  constexpr unsigned long kStable = 256;
  for (unsigned long i = 0; i < kStable; i += 2) iov::xa_store(&xa, i, encode(i, 1));
  std::atomic<bool> stop{false};
  auto reader = [&] {
    std::mt19937 rng(7);
    while (!stop.load(std::memory_order_relaxed)) {
      unsigned long i = (rng() % (kStable / 2)) * 2;
      void* e = iov::xa_load(&xa, i);
      if (e != encode(i, 1)) {
        ADD_FAILURE() << "stable index " << i << " read " << e;
        stop = true;
      }
      unsigned long first = i;
      if (iov::xa_find(&xa, &first, ULONG_MAX) != encode(i, 1) || first != i) {
        ADD_FAILURE() << "xa_find from stable index " << i << " found " << first;
        stop = true;
      }
    }
  };
  std::thread r1(reader), r2(reader);
  auto deadline = Clock::now() + kRunFor;
  for (int round = 0; round < 20000 && !stop; round++) {
    if (round % 64 == 0 && Clock::now() > deadline) break;
    unsigned long far = round % 3 == 0 ? ULONG_MAX : (1UL << (10 + round % 50)) + 1;
    EXPECT_EQ(iov::xa_store(&xa, far, encode(far & 0xffff, 2)), nullptr);
    EXPECT_EQ(iov::xa_store(&xa, 1 + 2 * (round % 100), encode(1, 3)), nullptr);
    EXPECT_EQ(iov::xa_erase(&xa, far), encode(far & 0xffff, 2));
    EXPECT_EQ(iov::xa_erase(&xa, 1 + 2 * (round % 100)), encode(1, 3));
  }
  stop = true;
  r1.join();
  r2.join();
  EXPECT_EQ(iov::xa_count(&xa), kStable / 2);
}

// xa_destroy under readers: they see the old entries or nothing.
TEST(XarrayConcurrent, DestroyUnderReaders) {
  Shared s(1024);
  std::vector<std::thread> readers;
  readers.emplace_back(load_reader, &s, 3);
  readers.emplace_back(walk_reader, &s);
  auto deadline = Clock::now() + kRunFor;
  for (int round = 0; round < 300 && !s.stop; round++) {
    if (Clock::now() > deadline) break;
    for (size_t k = 0; k < s.indices.size(); k += 1 + round % 7)
      ASSERT_FALSE(iov::xa_is_err(iov::xa_store(&s.xa, s.indices[k], encode(k, round))));
    iov::xa_destroy(&s.xa);
  }
  s.stop = true;
  for (auto& t : readers) t.join();
  EXPECT_TRUE(iov::xa_empty(&s.xa));
  iov::rcu_barrier();
}

// The brd pattern: pages in an xarray, read under RCU while a writer replaces
// them and frees the old ones with free_page_rcu. A page's bytes name its index.
TEST(XarrayConcurrent, ReplacedPagesOutliveTheirReaders) {
  constexpr unsigned long kPages = 64;
  iov::xarray xa;
  auto fresh_page = [](unsigned long index, unsigned long generation) {
    iov::page* p = iov::alloc_page();
    std::memset(iov::page_address(p), static_cast<int>(index), iov::PAGE_SIZE);
    std::memcpy(iov::page_address(p), &generation, sizeof generation);
    return p;
  };
  for (unsigned long i = 0; i < kPages; i++) iov::xa_store(&xa, i, fresh_page(i, 0));
  std::atomic<bool> stop{false};
  auto reader = [&](unsigned seed) {
    std::mt19937 rng(seed);
    unsigned char buf[iov::PAGE_SIZE];
    while (!stop.load(std::memory_order_relaxed)) {
      unsigned long i = rng() % kPages;
      iov::rcu_read_guard guard;
      auto* p = static_cast<iov::page*>(iov::xa_load(&xa, i));
      if (!p) continue;
      std::memcpy(buf, iov::page_address(p), sizeof buf);
      for (size_t b = sizeof(unsigned long); b < sizeof buf; b++) {
        if (buf[b] != static_cast<unsigned char>(i)) {
          ADD_FAILURE() << "page at index " << i << " has byte " << int(buf[b]) << " at " << b;
          stop = true;
          break;
        }
      }
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  auto deadline = Clock::now() + kRunFor;
  for (unsigned long gen = 1; gen < 20000 && !stop; gen++) {
    if (gen % 64 == 0 && Clock::now() > deadline) break;
    unsigned long i = gen % kPages;
    void* old = gen % 5 == 0 ? iov::xa_erase(&xa, i) : iov::xa_store(&xa, i, fresh_page(i, gen));
    ASSERT_FALSE(iov::xa_is_err(old));
    iov::free_page_rcu(static_cast<iov::page*>(old));
  }
  stop = true;
  r1.join();
  r2.join();
  unsigned long index;
  void* entry;
  xa_for_each(&xa, index, entry) iov::free_page(static_cast<iov::page*>(iov::xa_erase(&xa, index)));
  iov::rcu_barrier();
  EXPECT_EQ(iov::internal::rcu_callbacks_pending(), 0u);
}

}  // namespace
