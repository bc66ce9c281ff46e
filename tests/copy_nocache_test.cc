// copy_nocache_test.cc: copy_from_iter_nocache and copy_to_iter_nocache
// (copy_nocache.hpp) and the streaming-store copies under them (internal/memcpy_nt.hpp) against memcpy over
// a flat model, at every dispatch level the CPU has.
//
//   ctest --preset release -R copy_nocache
//   IOV_TEST_SEED=12345 build/release/tests/copy_nocache_test   # fresh samples
//
// Destinations carry guard bytes on both sides and start at every alignment,
// so the ragged head and tail of each piece (ordinary stores) and the whole
// lines between (streaming stores) are all checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "iov/internal/outofline.hpp"
#include "iov/copy.hpp"
#include "iov/copy_nocache.hpp"
#include "iov/internal/memcpy_nt.hpp"
#include "iov/iov_iter.hpp"
#include "iov/xarray.hpp"
#include "support/simd_levels.hpp"

namespace {

using u8 = unsigned char;

constexpr u8 kGuard = 0xcc;

uint64_t test_seed(uint64_t fixed) {
  const char* env = std::getenv("IOV_TEST_SEED");
  return env ? std::strtoull(env, nullptr, 0) : fixed;
}

void fill_random(u8* p, size_t len, std::mt19937_64& rng) {
  for (size_t k = 0; k < len; k++) p[k] = static_cast<u8>(rng());
}

// A destination with guards around it.
struct guarded {
  std::vector<u8> buf;
  size_t lead;
  // dst() is `align` bytes past a 64-byte boundary, with at least 64 guard bytes before it.
  guarded(size_t len, size_t align) : buf(64 + 63 + align + len + 64, kGuard) {
    size_t pad = (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    lead = 64 + pad + align;
  }
  u8* dst() { return buf.data() + lead; }
  // Guards intact, and the n bytes at dst() equal `want`.
  ::testing::AssertionResult holds(const u8* want, size_t n) {
    for (size_t k = 0; k < lead; k++)
      if (buf[k] != kGuard) return ::testing::AssertionFailure() << "guard before dst overwritten at -" << lead - k;
    for (size_t k = 0; k < n; k++)
      if (dst()[k] != want[k]) return ::testing::AssertionFailure() << "byte " << k << " of " << n << " differs";
    for (size_t k = lead + n; k < buf.size(); k++)
      if (buf[k] != kGuard) return ::testing::AssertionFailure() << "byte " << k - lead << " past dst written";
    return ::testing::AssertionSuccess();
  }
};

class CopyNocacheLevel
    : public iov_test::SimdLevelTest<iov::internal::memcpy_nt_select, iov::internal::memcpy_nt_level,
                             iov::internal::memcpy_nt_choice> {};

// Every length up to 1100 at every destination alignment, a few source ones.
TEST_P(CopyNocacheLevel, MemcpyNtShort) {
  std::mt19937_64 rng(test_seed(0x6e7));
  std::vector<u8> src(1100 + 64);
  fill_random(src.data(), src.size(), rng);
  for (size_t len = 0; len <= 1100; len++) {
    for (size_t align = 0; align < 64; align++) {
      const u8* s = src.data() + (len + align) % 64;
      guarded d(len, align);
      iov::internal::memcpy_nt(d.dst(), s, len);
      iov::internal::memcpy_nt_fence();
      ASSERT_TRUE(d.holds(s, len)) << "len=" << len << " align=" << align;
    }
  }
}

// Large copies: the four-pages-at-a-time interleave and what is left after it.
TEST_P(CopyNocacheLevel, MemcpyNtLarge) {
  const uint64_t seed = test_seed(0x1a49e);
  SCOPED_TRACE("IOV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<u8> src(5 * 16384 + 128);
  fill_random(src.data(), src.size(), rng);
  for (int round = 0; round < 60; round++) {
    size_t len = rng() % 2 ? (1 + rng() % 5) * 16384 + (rng() % 130) - 65 : rng() % (5 * 16384);
    size_t align = rng() % 64, salign = rng() % 64;
    guarded d(len, align);
    iov::internal::memcpy_nt(d.dst(), src.data() + salign, len);
    iov::internal::memcpy_nt_fence();
    ASSERT_TRUE(d.holds(src.data() + salign, len)) << "len=" << len << " align=" << align;
  }
}

// A batch: pieces of mixed sizes, contiguous in the destination as a walk
// makes them, or scattered; the copies may be deferred until finish().
TEST_P(CopyNocacheLevel, Batch) {
  const uint64_t seed = test_seed(0xba7c4);
  SCOPED_TRACE("IOV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<u8> src(64 * 1024);
  fill_random(src.data(), src.size(), rng);
  for (int round = 0; round < 200; round++) {
    size_t n = 1 + rng() % 11;
    std::vector<size_t> soff(n), len(n), doff(n);
    size_t total = 0;
    for (size_t k = 0; k < n; k++) {
      switch (rng() % 4) {  // short (memcpy), batched, or alone (MEMCPY_NT_ALONE and up)
        case 0: len[k] = rng() % 300; break;
        case 3: len[k] = rng() % 40000; break;
        default: len[k] = rng() % 6000; break;
      }
      soff[k] = rng() % (src.size() - len[k]);
      doff[k] = total + (rng() % 2 ? rng() % 70 : 0);  // gaps or none
      total = doff[k] + len[k];
    }
    size_t align = rng() % 64;
    guarded d(total, align);
    std::vector<u8> want(d.dst(), d.dst() + total);
    iov::internal::memcpy_nt_batch batch;
    for (size_t k = 0; k < n; k++) {
      batch.add(d.dst() + doff[k], src.data() + soff[k], len[k]);
      std::memcpy(want.data() + doff[k], src.data() + soff[k], len[k]);
    }
    batch.finish();
    ASSERT_TRUE(d.holds(want.data(), total)) << "round " << round;
  }
}

// ---- through the iterator ---------------------------------------------------

constexpr size_t kArenaPages = 32;

// A random ITER_SOURCE iterator over an arena of random bytes, and the address
// of each of its bytes, worked out here from the segments.
struct layout {
  iov::iov_iter iter;
  std::vector<const u8*> at;
  u8* arena;
  std::vector<::iovec> iov;
  std::vector<iov::kvec> kv;
  std::vector<iov::bio_vec> bv;
  std::unique_ptr<iov::xarray> xa;

  layout() : arena(reinterpret_cast<u8*>(iov::alloc_pages(iov::GFP_KERNEL, 5))) {}
  ~layout() { iov::free_pages(reinterpret_cast<iov::page*>(arena), 5); }
  layout(const layout&) = delete;
  layout& operator=(const layout&) = delete;

  void run(u8* base, size_t len) {
    for (size_t k = 0; k < len; k++) at.push_back(base + k);
  }
};

void build(layout* l, iov::iter_type type, unsigned dir, std::mt19937_64& rng) {
  const size_t arena_len = kArenaPages * iov::PAGE_SIZE, P = iov::PAGE_SIZE;
  fill_random(l->arena, arena_len, rng);
  auto piece_len = [&](size_t cap) { return rng() % 3 == 0 ? rng() % 300 : rng() % cap; };
  switch (type) {
    case iov::ITER_UBUF: {
      size_t off = rng() % 8192, len = rng() % (arena_len - off);
      l->run(l->arena + off, len);
      iov::iov_iter_ubuf(&l->iter, dir, l->arena + off, len);
      break;
    }
    case iov::ITER_IOVEC:
    case iov::ITER_KVEC: {
      size_t nr = 1 + rng() % 16, off = 0;
      for (size_t s = 0; s < nr; s++) {
        off = std::min(off + rng() % 100, arena_len);
        size_t len = std::min(piece_len(2 * P), arena_len - off);
        l->iov.push_back({l->arena + off, len});
        l->kv.push_back({l->arena + off, len});
        l->run(l->arena + off, len);
        off += len;
      }
      if (type == iov::ITER_IOVEC) iov::iov_iter_init(&l->iter, dir, l->iov.data(), nr, l->at.size());
      else iov::iov_iter_kvec(&l->iter, dir, l->kv.data(), nr, l->at.size());
      break;
    }
    case iov::ITER_BVEC: {
      size_t nr = 1 + rng() % 16;
      for (size_t s = 0; s < nr; s++) {
        size_t pg = rng() % (kArenaPages - 1), offset = rng() % 4 == 0 ? 0 : rng() % P;
        size_t len = std::min(rng() % 4 == 0 ? P : piece_len(2 * P), 2 * P - offset);
        iov::bio_vec b;
        iov::bvec_set_page(&b, reinterpret_cast<iov::page*>(l->arena + pg * P), static_cast<unsigned>(len),
                           static_cast<unsigned>(offset));
        l->bv.push_back(b);
        l->run(l->arena + pg * P + offset, len);
      }
      iov::iov_iter_bvec(&l->iter, dir, l->bv.data(), nr, l->at.size());
      break;
    }
    case iov::ITER_XARRAY: {
      l->xa = std::make_unique<iov::xarray>();
      size_t npages = 1 + rng() % 8, first = rng() % 1000;
      size_t start = first * P + rng() % P;
      size_t len = rng() % ((first + npages) * P - start + 1);
      for (size_t k = 0; k < len; k++) {
        size_t index = (start + k) / P;
        u8* frame = l->arena + (index * 7 % kArenaPages) * P;
        if (xa_load(l->xa.get(), index) == nullptr) xa_store(l->xa.get(), index, frame);
        l->at.push_back(frame + (start + k) % P);
      }
      iov::iov_iter_xarray(&l->iter, dir, l->xa.get(), static_cast<loff_t>(start), len);
      break;
    }
    default:
      iov::iov_iter_discard(&l->iter, iov::ITER_DEST, rng() % 20000);  // ITER_SOURCE is the kernel's BUG
      break;
  }
}

bool same_position(const iov::iov_iter& a, const iov::iov_iter& b) {
  return a.type == b.type && a.data_source == b.data_source && a.count == b.count &&
         a.iov_offset == b.iov_offset && a.ubuf == b.ubuf && a.nr_segs == b.nr_segs;
}

using copy_fn = size_t (*)(void*, size_t, iov::iov_iter*);

// Copies `bytes` out of a copy of l.iter with `copy` and checks it against the model.
void check_copy(const layout& l, copy_fn copy, size_t bytes, size_t align, iov::iov_iter* after) {
  const size_t count = l.iter.count, want = std::min(bytes, l.at.size());
  std::vector<u8> model(want);
  for (size_t k = 0; k < want; k++) model[k] = *l.at[k];
  guarded d(want + 8, align);
  *after = l.iter;
  ASSERT_EQ(copy(d.dst(), bytes, after), want) << "bytes=" << bytes << " align=" << align;
  ASSERT_TRUE(d.holds(model.data(), want)) << "bytes=" << bytes << " align=" << align;
  EXPECT_EQ(iov::iov_iter_count(after), count - want);
  if (want < l.at.size()) {  // the iterator stands on the next byte
    iov::iov_iter next = *after;
    u8 b = 0;
    ASSERT_EQ(iov::copy_from_iter(&b, 1, &next), 1u);
    EXPECT_EQ(b, *l.at[want]);
  }
}

class CopyNocacheIter : public CopyNocacheLevel {};

TEST_P(CopyNocacheIter, RandomLayoutsOfEveryType) {
  const uint64_t seed = test_seed(0xc0c1e);
  SCOPED_TRACE("IOV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (iov::iter_type t : {iov::ITER_UBUF, iov::ITER_IOVEC, iov::ITER_KVEC, iov::ITER_BVEC, iov::ITER_XARRAY}) {
    for (int round = 0; round < 40; round++) {
      SCOPED_TRACE("type=" + std::to_string(t) + " round=" + std::to_string(round));
      layout l;
      build(&l, t, iov::ITER_SOURCE, rng);
      const size_t count = l.iter.count;
      for (size_t bytes : {count, count + 1, size_t(rng() % (count + 1)), size_t(rng() % 300)}) {
        size_t align = rng() % 64;
        iov::iov_iter a, b;
        ASSERT_NO_FATAL_FAILURE(check_copy(l, iov::copy_from_iter_nocache, bytes, align, &a));
        ASSERT_NO_FATAL_FAILURE(check_copy(l, iov::internal::outofline::copy_from_iter_nocache, bytes, align, &b));
        EXPECT_TRUE(same_position(a, b)) << "inline and out of line end apart";
      }
    }
  }
}

// ---- into the iterator ------------------------------------------------------

using copy_to_fn = size_t (*)(const void*, size_t, iov::iov_iter*);

// Copies `bytes` of random source into a copy of l.iter (ITER_DEST) with
// `copy`, and checks the arena against the model: byte k of the source at
// l.at[k] for k below the count, every other byte of the arena as it was.
// Where bvec pieces overlap, a byte written twice may hold either write (the
// streams are interleaved), so it must hold one of them.
// The arena's bookkeeping, kept from one check to the next: allocated anew
// each check, its first touches were page faults, most of a check's time.
struct arena_record {
  std::vector<u8> before;
  std::vector<uint32_t> writes, first;
};

void check_copy_to(layout& l, copy_to_fn copy, size_t bytes, std::mt19937_64& rng, arena_record& r,
                   iov::iov_iter* after) {
  const size_t arena_len = kArenaPages * iov::PAGE_SIZE, count = l.iter.count;
  const size_t want = std::min(bytes, l.at.size());
  r.before.assign(l.arena, l.arena + arena_len);  // random, or the last check's copy
  const std::vector<u8>& before = r.before;
  std::vector<u8> src(want + 1);
  fill_random(src.data(), src.size(), rng);
  // For each byte of the arena: how many writes reach it, and the first one's k.
  r.writes.assign(arena_len, 0);
  r.first.resize(arena_len);
  std::vector<uint32_t>& writes = r.writes;
  std::vector<uint32_t>& first = r.first;
  for (size_t k = 0; k < want; k++) {
    const size_t off = l.at[k] - l.arena;
    if (writes[off]++ == 0) first[off] = static_cast<uint32_t>(k);
  }
  *after = l.iter;
  ASSERT_EQ(copy(src.data(), bytes, after), want) << "bytes=" << bytes;
  EXPECT_EQ(iov::iov_iter_count(after), count - want);
  std::unordered_map<size_t, std::bitset<256>> either;  // the values of the bytes written more than once
  for (size_t k = 0; k < want; k++)
    if (const size_t off = l.at[k] - l.arena; writes[off] > 1) either[off].set(src[k]);
  for (size_t off = 0; off < arena_len; off++) {
    // The assertions only where a byte differs: one a byte of the arena was
    // most of the case's time under a sanitizer.
    if (writes[off] == 0 ? l.arena[off] == before[off]
        : writes[off] == 1 ? l.arena[off] == src[first[off]]
                           : either[off].test(l.arena[off]))
      continue;
    if (writes[off] == 0) {
      ASSERT_EQ(l.arena[off], before[off]) << "byte " << off << " of the arena changed, bytes=" << bytes;
    } else if (writes[off] == 1) {
      ASSERT_EQ(l.arena[off], src[first[off]]) << "byte " << off << ", bytes=" << bytes;
    } else {
      ASSERT_TRUE(either[off].test(l.arena[off])) << "byte " << off << " holds none of its writes, bytes=" << bytes;
    }
  }
}

class CopyToNocacheIter : public CopyNocacheLevel {};

TEST_P(CopyToNocacheIter, RandomLayoutsOfEveryType) {
  const uint64_t seed = test_seed(0xc0c2e);
  SCOPED_TRACE("IOV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  arena_record record;
  for (iov::iter_type t : {iov::ITER_UBUF, iov::ITER_IOVEC, iov::ITER_KVEC, iov::ITER_BVEC, iov::ITER_XARRAY}) {
    for (int round = 0; round < 20; round++) {
      SCOPED_TRACE("type=" + std::to_string(t) + " round=" + std::to_string(round));
      layout l;
      build(&l, t, iov::ITER_DEST, rng);
      const size_t count = l.iter.count;
      for (size_t bytes : {count, count + 1, size_t(rng() % (count + 1)), size_t(rng() % 300)}) {
        iov::iov_iter a, b;
        ASSERT_NO_FATAL_FAILURE(check_copy_to(l, iov::copy_to_iter_nocache, bytes, rng, record, &a));
        ASSERT_NO_FATAL_FAILURE(check_copy_to(l, iov::internal::outofline::copy_to_iter_nocache, bytes, rng, record, &b));
        EXPECT_TRUE(same_position(a, b)) << "inline and out of line end apart";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, CopyNocacheLevel, iov_test::all_simd_levels(), iov_test::simd_level_param_name);
INSTANTIATE_TEST_SUITE_P(Levels, CopyNocacheIter, iov_test::all_simd_levels(), iov_test::simd_level_param_name);
INSTANTIATE_TEST_SUITE_P(Levels, CopyToNocacheIter, iov_test::all_simd_levels(), iov_test::simd_level_param_name);

// Out of an ITER_DEST iterator (a discard one included): 0, nothing changes.
TEST(CopyNocacheContract, DestIteratorCopiesNothing) {
  std::mt19937_64 rng(test_seed(0xde57));
  for (iov::iter_type t : {iov::ITER_UBUF, iov::ITER_IOVEC, iov::ITER_KVEC, iov::ITER_BVEC, iov::ITER_XARRAY,
                           iov::ITER_DISCARD}) {
    layout l;
    build(&l, t, iov::ITER_DEST, rng);
    iov::iov_iter a = l.iter, b = l.iter;
    guarded d(64, 3);
    EXPECT_EQ(iov::copy_from_iter_nocache(d.dst(), 64, &a), 0u);
    EXPECT_EQ(iov::internal::outofline::copy_from_iter_nocache(d.dst(), 64, &b), 0u);
    EXPECT_TRUE(same_position(a, l.iter));
    EXPECT_TRUE(same_position(b, l.iter));
    EXPECT_TRUE(d.holds(nullptr, 0));
  }
}

// Into an ITER_SOURCE iterator: 0, nothing changes, nothing written.
TEST(CopyNocacheContract, SourceIteratorTakesNothing) {
  std::mt19937_64 rng(test_seed(0x50c));
  for (iov::iter_type t : {iov::ITER_UBUF, iov::ITER_IOVEC, iov::ITER_KVEC, iov::ITER_BVEC, iov::ITER_XARRAY}) {
    layout l;
    build(&l, t, iov::ITER_SOURCE, rng);
    const std::vector<u8> before(l.arena, l.arena + kArenaPages * iov::PAGE_SIZE);
    std::vector<u8> src(8192, 0x5a);
    iov::iov_iter a = l.iter, b = l.iter;
    EXPECT_EQ(iov::copy_to_iter_nocache(src.data(), src.size(), &a), 0u);
    EXPECT_EQ(iov::internal::outofline::copy_to_iter_nocache(src.data(), src.size(), &b), 0u);
    EXPECT_TRUE(same_position(a, l.iter));
    EXPECT_TRUE(same_position(b, l.iter));
    EXPECT_TRUE(std::equal(before.begin(), before.end(), l.arena));
  }
}

#if IOV_FAULT_INJECTION
// A user copy that faults after n bytes: exactly n copied, the iterator advanced by n.
TEST(CopyNocacheContract, UserFaultStopsShort) {
  std::mt19937_64 rng(test_seed(0xfa17));
  for (iov::iter_type t : {iov::ITER_UBUF, iov::ITER_IOVEC}) {
    for (int round = 0; round < 20; round++) {
      layout l;
      build(&l, t, iov::ITER_SOURCE, rng);
      size_t n = rng() % (l.at.size() + 1);
      iov::internal::usercopy_fault_after(n);
      iov::iov_iter a;
      std::vector<u8> model(n);
      for (size_t k = 0; k < n; k++) model[k] = *l.at[k];
      guarded d(l.at.size(), rng() % 64);
      a = l.iter;
      size_t got = iov::copy_from_iter_nocache(d.dst(), l.at.size(), &a);
      iov::internal::usercopy_fault_clear();
      ASSERT_EQ(got, n);
      EXPECT_TRUE(d.holds(model.data(), n));
      EXPECT_EQ(iov::iov_iter_count(&a), l.iter.count - n);
    }
  }
}

// Into a user-backed iterator that faults after n bytes: exactly n written,
// the iterator advanced by n.
TEST(CopyNocacheContract, UserFaultStopsCopyToShort) {
  std::mt19937_64 rng(test_seed(0xfa18));
  for (iov::iter_type t : {iov::ITER_UBUF, iov::ITER_IOVEC}) {
    for (int round = 0; round < 20; round++) {
      layout l;
      build(&l, t, iov::ITER_DEST, rng);
      const std::vector<u8> before(l.arena, l.arena + kArenaPages * iov::PAGE_SIZE);
      std::vector<u8> src(l.at.size() + 1);
      fill_random(src.data(), src.size(), rng);
      size_t n = rng() % (l.at.size() + 1);
      iov::internal::usercopy_fault_after(n);
      iov::iov_iter a = l.iter;
      size_t got = iov::copy_to_iter_nocache(src.data(), l.at.size(), &a);
      iov::internal::usercopy_fault_clear();
      ASSERT_EQ(got, n);
      EXPECT_EQ(iov::iov_iter_count(&a), l.iter.count - n);
      for (size_t k = 0; k < l.at.size(); k++)
        ASSERT_EQ(*l.at[k], k < n ? src[k] : before[l.at[k] - l.arena]) << "byte " << k;
    }
  }
}
#endif

}  // namespace
