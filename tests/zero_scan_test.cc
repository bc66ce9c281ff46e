// zero_scan_test.cc: memchr_inv, mem_is_zero and the iterator zero scans
// (zero_scan.hpp) against byte loops over a flat model, at every dispatch
// level the CPU has.
//
//   ctest --preset release -R zero_scan
//   IOV_TEST_SEED=12345 build/release/tests/zero_scan_test   # fresh samples
//
// The iterator tests build random layouts of every iterator type over one
// arena whose bytes outside the iterator are non-zero, so a scan that reads
// past a piece gets a wrong answer, and keep the model as the address of each
// logical byte, worked out here from the segments (never by the library).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "iov/internal/outofline.hpp"
#include "iov/copy.hpp"
#include "iov/internal/zero_scan_simd.hpp"
#include "iov/iov_iter.hpp"
#include "iov/xarray.hpp"
#include "iov/zero_scan.hpp"
#include "support/simd_levels.hpp"

namespace {

using iov::internal::simd_level;
using u8 = unsigned char;

uint64_t test_seed(uint64_t fixed) {
  const char* env = std::getenv("IOV_TEST_SEED");
  return env ? std::strtoull(env, nullptr, 0) : fixed;
}

// References.
const u8* ref_memchr_inv(const u8* p, u8 c, size_t len) {
  for (size_t k = 0; k < len; k++)
    if (p[k] != c) return p + k;
  return nullptr;
}

// Each test runs at one dispatch level and restores the default afterwards.
class ZeroScanLevel
    : public iov_test::SimdLevelTest<iov::internal::zero_scan_select, iov::internal::zero_scan_level,
                             iov::internal::zero_scan_choice> {};

// Every length 0..64 at every alignment 0..63, the odd byte at every position,
// with the bytes around the buffer set to something else than c.
TEST_P(ZeroScanLevel, ExhaustiveShort) {
  alignas(64) u8 arena[64 + 64 + 64 + 64];
  for (int c : {0, 0xa5, 0xff}) {
    const u8 other = static_cast<u8>(c ^ 0x5a);
    for (size_t align = 0; align < 64; align++) {
      for (size_t len = 0; len <= 64; len++) {
        u8* p = arena + 64 + align;
        std::memset(arena, other, sizeof arena);
        std::memset(p, c, len);
        ASSERT_EQ(iov::memchr_inv(p, c, len), nullptr) << "c=" << c << " align=" << align << " len=" << len;
        if (c == 0) {
          ASSERT_TRUE(iov::mem_is_zero(p, len)) << "align=" << align << " len=" << len;
        }
        for (size_t pos = 0; pos < len; pos++) {
          for (u8 flip : {u8{0x01}, u8{0x80}, u8{0xff}}) {
            p[pos] = static_cast<u8>(c ^ flip);
            ASSERT_EQ(iov::memchr_inv(p, c, len), p + pos)
                << "c=" << c << " align=" << align << " len=" << len << " pos=" << pos;
            if (c == 0) {
              ASSERT_FALSE(iov::mem_is_zero(p, len)) << "align=" << align << " len=" << len << " pos=" << pos;
            }
            if (pos + 1 < len) {  // a second odd byte later must not win
              p[len - 1] = other;
              ASSERT_EQ(iov::memchr_inv(p, c, len), p + pos);
              p[len - 1] = static_cast<u8>(c);
            }
            p[pos] = static_cast<u8>(c);
          }
        }
      }
    }
  }
}

// Lengths sampled up to 8192 (biased towards vector and page multiples +-1).
void check_sampled_lengths() {
  const uint64_t seed = test_seed(0x5eed2e20);
  SCOPED_TRACE("IOV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<u8> arena(8192 + 128 + 64);
  for (int round = 0; round < 4000; round++) {
    size_t len;
    if (rng() % 2) {
      size_t base = size_t{64} << (rng() % 8);  // 64 .. 8192
      len = std::min<size_t>(8192, base + (rng() % 3) - 1);
    } else {
      len = rng() % 8193;
    }
    size_t align = rng() % 64;
    u8 c = rng() % 2 ? 0 : static_cast<u8>(rng());
    u8* p = arena.data() + 64 + align;
    std::fill(arena.begin(), arena.end(), static_cast<u8>(c ^ 0x33));
    std::memset(p, c, len);
    int odd = static_cast<int>(rng() % 6);  // 0: none; 1: first; 2: middle; 3: last; else random
    size_t pos = len;
    if (len && odd) pos = odd == 1 ? 0 : odd == 2 ? len / 2 : odd == 3 ? len - 1 : rng() % len;
    if (pos < len) p[pos] = static_cast<u8>(c ^ (1 + rng() % 255));
    if (pos < len && rng() % 2) p[pos + (rng() % (len - pos))] ^= 0x10;  // maybe a later one too
    const u8* want = ref_memchr_inv(p, c, len);
    ASSERT_EQ(iov::memchr_inv(p, c, len), want) << "len=" << len << " align=" << align << " c=" << int{c};
    if (c == 0) {
      ASSERT_EQ(iov::mem_is_zero(p, len), want == nullptr) << "len=" << len << " align=" << align;
    }
  }
}

// The scans never touch a byte outside [p, p + len): buffers that end at, or
// start at, an inaccessible page.
void check_never_reads_outside() {
  const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  u8* mid = static_cast<u8*>(m) + pg;
  ASSERT_EQ(mprotect(m, pg, PROT_NONE), 0);
  ASSERT_EQ(mprotect(mid + pg, pg, PROT_NONE), 0);
  std::memset(mid, 0, pg);
  for (size_t len = 0; len <= 520; len++) {
    for (u8* p : {mid, mid + pg - len}) {
      EXPECT_TRUE(iov::mem_is_zero(p, len));
      EXPECT_EQ(iov::memchr_inv(p, 0, len), nullptr);
      EXPECT_EQ(iov::memchr_inv(p, 7, len), len ? p : nullptr);
    }
  }
  munmap(m, 3 * pg);
}

// Buffers of up to nine pages (the scans go a page at a time past one), most
// ending at an inaccessible page, at every alignment, the odd byte anywhere:
// against the byte loop.
void check_long_buffers_ending_at_a_guard_page() {
  const uint64_t seed = test_seed(0x10e6b0f5);
  SCOPED_TRACE("IOV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t span = 9 * pg;
  void* m = mmap(nullptr, span + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  u8* base = static_cast<u8*>(m);
  u8* end = base + span;
  ASSERT_EQ(mprotect(end, pg, PROT_NONE), 0);
  for (int round = 0; round < 600; round++) {
    size_t len = rng() % 2 ? (1 + rng() % 9) * 4096 + (rng() % 3) - 1 : 513 + rng() % (span - 64 - 513);
    len = std::min(len, span - 64);
    u8* p = end - len - (rng() % 2 ? 0 : rng() % 64);
    u8 c = rng() % 2 ? 0 : static_cast<u8>(rng());
    std::memset(base, c ^ 0x33, span);
    std::memset(p, c, len);
    int odd = static_cast<int>(rng() % 5);  // 0: none; 1: first; 2: last; else random
    size_t pos = odd == 0 ? len : odd == 1 ? 0 : odd == 2 ? len - 1 : rng() % len;
    if (pos < len) p[pos] = static_cast<u8>(c ^ (1 + rng() % 255));
    const u8* want = ref_memchr_inv(p, c, len);
    ASSERT_EQ(iov::memchr_inv(p, c, len), want) << "len=" << len << " end-gap=" << end - (p + len) << " c=" << int{c};
    if (c == 0) {
      ASSERT_EQ(iov::mem_is_zero(p, len), want == nullptr) << "len=" << len << " end-gap=" << end - (p + len);
    }
  }
  munmap(m, span + pg);
}

TEST_P(ZeroScanLevel, SampledLengths) { check_sampled_lengths(); }
TEST_P(ZeroScanLevel, NeverReadsOutside) { check_never_reads_outside(); }
TEST_P(ZeroScanLevel, LongBuffersEndingAtAGuardPage) { check_long_buffers_ending_at_a_guard_page(); }

INSTANTIATE_TEST_SUITE_P(Levels, ZeroScanLevel, iov_test::all_simd_levels(), iov_test::simd_level_param_name);

// The kernels installed as on an AMD CPU (Zen 5), whatever this one is: at
// the AVX levels mem_is_zero scans a page with the blocks loop there and with
// memchr_inv's loop elsewhere (kernels_of), so both forms are checked on any CPU.
class ZeroScanLevelAsAmd : public ZeroScanLevel {
 protected:
  void SetUp() override {
    static constexpr iov::internal::simd_cpu_id zen5{true, 26, 2};
    iov::internal::simd_cpu_id_for_test(&zen5);
    ZeroScanLevel::SetUp();
  }
  void TearDown() override {
    iov::internal::simd_cpu_id_for_test(nullptr);
    ZeroScanLevel::TearDown();
  }
};

TEST_P(ZeroScanLevelAsAmd, SampledLengths) { check_sampled_lengths(); }
TEST_P(ZeroScanLevelAsAmd, NeverReadsOutside) { check_never_reads_outside(); }
TEST_P(ZeroScanLevelAsAmd, LongBuffersEndingAtAGuardPage) { check_long_buffers_ending_at_a_guard_page(); }

INSTANTIATE_TEST_SUITE_P(Levels, ZeroScanLevelAsAmd, iov_test::all_simd_levels(), iov_test::simd_level_param_name);

// IOV_SIMD lowers the ceiling, and the level a family resolves to, never
// raises them: forced, the zero scan runs the ceiling (it has no requirement
// beyond the CPU's); unforced, its measured choice stays at or below it.
TEST(ZeroScanDispatch, EnvironmentCapsTheLevel) {
  const simd_level best = iov::internal::best_simd_level();
  const char* saved = std::getenv("IOV_SIMD");
  std::string keep = saved ? saved : "";
  const std::pair<const char*, simd_level> forced[] = {
      {"portable", simd_level::portable}, {"avx2", std::min(best, simd_level::avx2)}, {"avx512", best}};
  for (const auto& [env, want] : forced) {
    setenv("IOV_SIMD", env, 1);
    EXPECT_EQ(iov::internal::simd_ceiling(), want) << env;
    iov::internal::simd_choice c = iov::internal::zero_scan_choose();
    EXPECT_TRUE(c.forced) << env;
    EXPECT_EQ(c.level, want) << env;
    EXPECT_EQ(iov::internal::zero_scan_level(), want) << env;
  }
  unsetenv("IOV_SIMD");
  EXPECT_EQ(iov::internal::simd_ceiling(), best);
  iov::internal::simd_choice c = iov::internal::zero_scan_choose();
  EXPECT_FALSE(c.forced);
  EXPECT_LE(c.level, best);
  if (saved) setenv("IOV_SIMD", keep.c_str(), 1);
  iov::internal::zero_scan_choose();  // the level this process would have chosen
}

TEST(ZeroScanDispatch, SelectRefusesWhatTheCpuLacks) {
  for (simd_level l : iov_test::kAllSimdLevels)
    EXPECT_EQ(iov::internal::zero_scan_select(l), iov::internal::cpu_supports(l));
  EXPECT_TRUE(iov::internal::zero_scan_select(iov::internal::simd_ceiling()));
}

// ---- iterator layouts -------------------------------------------------------

constexpr size_t kArenaPages = 32;
constexpr u8 kOutside = 0xee;

// A random iterator over an arena, and the address of each of its bytes.
struct layout {
  iov::iter_type type;
  iov::iov_iter iter;
  std::vector<u8*> at;           // at[k]: where logical byte k lives
  std::vector<size_t> starts;    // logical offsets where a walk piece starts
  u8* arena = nullptr;
  std::vector<::iovec> iov;
  std::vector<iov::kvec> kv;
  std::vector<iov::bio_vec> bv;
  std::unique_ptr<iov::xarray> xa;

  layout() { arena = reinterpret_cast<u8*>(iov::alloc_pages(iov::GFP_KERNEL, 5)); }
  ~layout() { iov::free_pages(reinterpret_cast<iov::page*>(arena), 5); }
  layout(const layout&) = delete;
  layout& operator=(const layout&) = delete;
};

void add_run(layout* l, u8* base, size_t len) {
  for (size_t k = 0; k < len; k++) l->at.push_back(base + k);
}

// Fills l with a random iterator of `type` and direction `dir`; `hole` (XARRAY
// only) leaves one index out, which ends a walk there.
void build(layout* l, iov::iter_type type, unsigned dir, std::mt19937_64& rng, bool hole = false) {
  l->type = type;
  std::memset(l->arena, kOutside, kArenaPages * iov::PAGE_SIZE);
  auto small_len = [&](size_t cap) {
    switch (rng() % 4) {
      case 0: return size_t(rng() % 2 ? 0 : 1 + rng() % 16);
      case 1: return size_t(rng() % 300);
      default: return size_t(rng() % std::max<size_t>(cap, 1));
    }
  };
  size_t arena_len = kArenaPages * iov::PAGE_SIZE;
  switch (type) {
    case iov::ITER_UBUF: {
      size_t off = rng() % 8192, len = rng() % (arena_len - off);
      add_run(l, l->arena + off, len);
      iov::iov_iter_ubuf(&l->iter, dir, l->arena + off, len);
      break;
    }
    case iov::ITER_IOVEC:
    case iov::ITER_KVEC: {
      size_t nr = 1 + rng() % 16, off = 0;
      for (size_t s = 0; s < nr; s++) {
        off = std::min(off + rng() % 100, arena_len);  // a gap (or none: adjacent segments)
        size_t len = std::min(small_len(2 * iov::PAGE_SIZE), arena_len - off);
        l->iov.push_back({l->arena + off, len});
        l->kv.push_back({l->arena + off, len});
        add_run(l, l->arena + off, len);
        off += len;
      }
      if (type == iov::ITER_IOVEC) iov::iov_iter_init(&l->iter, dir, l->iov.data(), nr, l->at.size());
      else iov::iov_iter_kvec(&l->iter, dir, l->kv.data(), nr, l->at.size());
      break;
    }
    case iov::ITER_BVEC: {
      size_t nr = 1 + rng() % 16;
      for (size_t s = 0; s < nr; s++) {  // pages in any order, some bvecs over two frames
        size_t pg = rng() % (kArenaPages - 1), offset = rng() % iov::PAGE_SIZE;
        size_t len = std::min(small_len(2 * iov::PAGE_SIZE), 2 * iov::PAGE_SIZE - offset);
        u8* frame = l->arena + pg * iov::PAGE_SIZE;
        iov::bio_vec b;
        iov::bvec_set_page(&b, reinterpret_cast<iov::page*>(frame), static_cast<unsigned>(len),
                           static_cast<unsigned>(offset));
        l->bv.push_back(b);
        add_run(l, frame + offset, len);
      }
      iov::iov_iter_bvec(&l->iter, dir, l->bv.data(), nr, l->at.size());
      break;
    }
    case iov::ITER_XARRAY: {
      l->xa = std::make_unique<iov::xarray>();
      size_t npages = 1 + rng() % 8, first = rng() % 1000;
      size_t start = first * iov::PAGE_SIZE + rng() % iov::PAGE_SIZE;
      size_t skip_index = hole && npages > 1 ? first + 1 + rng() % (npages - 1) : SIZE_MAX;
      size_t len = rng() % ((first + npages) * iov::PAGE_SIZE - start + 1);
      for (size_t k = 0; k < len; k++) {
        size_t index = (start + k) / iov::PAGE_SIZE;
        u8* frame = l->arena + (index * 7 % kArenaPages) * iov::PAGE_SIZE;  // scattered
        if (index >= skip_index) break;  // the walk ends at the hole
        if (xa_load(l->xa.get(), index) == nullptr) xa_store(l->xa.get(), index, frame);
        l->at.push_back(frame + (start + k) % iov::PAGE_SIZE);
      }
      iov::iov_iter_xarray(&l->iter, dir, l->xa.get(), static_cast<loff_t>(start), len);
      break;
    }
    default:
      iov::iov_iter_discard(&l->iter, iov::ITER_DEST, rng() % 20000);  // ITER_SOURCE is the kernel's BUG
      break;
  }
  // Zero every byte the iterator holds (the model reads them back through `at`).
  for (u8* p : l->at) *p = 0;
  bool paged = type == iov::ITER_BVEC || type == iov::ITER_XARRAY;
  for (size_t k = 0; k < l->at.size(); k++) {
    uintptr_t a = reinterpret_cast<uintptr_t>(l->at[k]);
    if (k == 0 || l->at[k] != l->at[k - 1] + 1 || (paged && a % iov::PAGE_SIZE == 0)) l->starts.push_back(k);
  }
}

// What the model says: the first non-zero byte among the first n, or n.
size_t model_first_nonzero(const layout& l, size_t n) {
  for (size_t k = 0; k < n && k < l.at.size(); k++)
    if (*l.at[k] != 0) return k;
  return std::min(n, l.at.size());
}

bool same_position(const iov::iov_iter& a, const iov::iov_iter& b) {
  return a.type == b.type && a.data_source == b.data_source && a.count == b.count &&
         a.iov_offset == b.iov_offset && a.ubuf == b.ubuf && a.nr_segs == b.nr_segs;
}

// Checks both scans, inline and out of line, for `bytes` against the model.
void check_scans(const layout& l, size_t bytes) {
  const iov::iov_iter before = l.iter;
  const size_t count = before.count;
  const bool discard = l.type == iov::ITER_DISCARD;
  // The model's answer; a hole in an XARRAY makes its iterator short of count.
  const size_t reachable = std::min(bytes, l.at.size());
  const size_t first = model_first_nonzero(l, reachable);
  const bool want_zero = bytes == 0 || (!discard && bytes <= count && reachable == bytes && first == bytes);
  const size_t want_skip = discard ? 0 : first;

  EXPECT_EQ(iov::iov_iter_is_zero(&l.iter, bytes), want_zero) << "bytes=" << bytes;
  EXPECT_EQ(iov::internal::outofline::iov_iter_is_zero(&l.iter, bytes), want_zero) << "bytes=" << bytes;
  EXPECT_TRUE(same_position(l.iter, before));

  iov::iov_iter a = before, b = before;
  ASSERT_EQ(iov::iov_iter_skip_zeroes(&a, bytes), want_skip) << "bytes=" << bytes;
  ASSERT_EQ(iov::internal::outofline::iov_iter_skip_zeroes(&b, bytes), want_skip) << "bytes=" << bytes;
  EXPECT_TRUE(same_position(a, b));
  EXPECT_EQ(iov::iov_iter_count(&a), count - want_skip);
  if (!discard && want_skip < l.at.size()) {  // the next byte is the model's
    a.data_source = true;  // read it out whatever the direction
    u8 next = 0x77;
    ASSERT_EQ(iov::copy_from_iter(&next, 1, &a), 1u);
    EXPECT_EQ(next, *l.at[want_skip]);
  }
}

void check_layout(layout& l, std::mt19937_64& rng) {
  const size_t n = l.at.size(), count = l.iter.count;
  std::vector<size_t> sizes = {0, 1, count, count + 1, rng() % (count + 1)};
  for (size_t s : sizes) ASSERT_NO_FATAL_FAILURE(check_scans(l, s));  // all zero
  if (n == 0) return;
  std::vector<size_t> marks;
  for (size_t i = 0; i < l.starts.size(); i++) {  // first, middle and last byte of each piece
    size_t b = l.starts[i], e = i + 1 < l.starts.size() ? l.starts[i + 1] : n;
    marks.insert(marks.end(), {b, b + (e - b) / 2, e - 1});
  }
  for (size_t k : marks) {
    for (int across = 0; across < 2; across++) {  // alone, or a run across the next boundary
      u8* p = l.at[k];
      u8* q = across && k + 1 < n ? l.at[k + 1] : nullptr;
      *p = static_cast<u8>(1 + rng() % 255);
      if (q) *q = 0x80;
      for (size_t s : {count, k, k + 1, k + 2, rng() % (count + 1)}) ASSERT_NO_FATAL_FAILURE(check_scans(l, s));
      *p = 0;
      if (q) *q = 0;
    }
  }
}

class ZeroScanIter : public ZeroScanLevel {};

TEST_P(ZeroScanIter, RandomLayoutsOfEveryType) {
  const uint64_t seed = test_seed(0x1e70c4a9);
  SCOPED_TRACE("IOV_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (iov::iter_type t : {iov::ITER_UBUF, iov::ITER_IOVEC, iov::ITER_KVEC, iov::ITER_BVEC, iov::ITER_XARRAY,
                           iov::ITER_DISCARD}) {
    for (int round = 0; round < 12; round++) {
      SCOPED_TRACE("type=" + std::to_string(t) + " round=" + std::to_string(round));
      layout l;
      build(&l, t, round % 2 ? iov::ITER_SOURCE : iov::ITER_DEST, rng);
      ASSERT_NO_FATAL_FAILURE(check_layout(l, rng));
    }
  }
}

// A missing XARRAY index ends the walk: the scans stop there.
TEST_P(ZeroScanIter, XarrayHole) {
  std::mt19937_64 rng(test_seed(0x401e));
  for (int round = 0; round < 12; round++) {
    layout l;
    build(&l, iov::ITER_XARRAY, iov::ITER_SOURCE, rng, /*hole=*/true);
    ASSERT_NO_FATAL_FAILURE(check_layout(l, rng));
  }
}

TEST(ZeroScanIterContract, DiscardAndZeroBytes) {
  iov::iov_iter it;
  iov::iov_iter_discard(&it, iov::ITER_DEST, 4096);
  EXPECT_TRUE(iov::iov_iter_is_zero(&it, 0));
  EXPECT_FALSE(iov::iov_iter_is_zero(&it, 1));
  EXPECT_FALSE(iov::internal::outofline::iov_iter_is_zero(&it, 4096));
  EXPECT_EQ(iov::iov_iter_skip_zeroes(&it, 4096), 0u);
  EXPECT_EQ(iov::internal::outofline::iov_iter_skip_zeroes(&it, 4096), 0u);
  EXPECT_EQ(iov::iov_iter_count(&it), 4096u);

  u8 buf[16] = {};
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf, 0);  // an empty iterator is zero for 0 bytes only
  EXPECT_TRUE(iov::iov_iter_is_zero(&it, 0));
  EXPECT_FALSE(iov::iov_iter_is_zero(&it, 1));
  EXPECT_EQ(iov::iov_iter_skip_zeroes(&it, 1), 0u);
}

INSTANTIATE_TEST_SUITE_P(Levels, ZeroScanIter, iov_test::all_simd_levels(), iov_test::simd_level_param_name);

}  // namespace
