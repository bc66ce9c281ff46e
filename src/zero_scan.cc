// zero_scan.cc: the kernels behind memchr_inv() and mem_is_zero() — portable,
// AVX2 and AVX-512, chosen once at run time by measurement — and the compiled-once walks of
// the iterator forms iov_iter_is_zero() and iov_iter_skip_zeroes()
// (outofline_walk; zero_scan.hpp).
//
//   iov::mem_is_zero(buf, len);                        // dispatched kernel
//   iov::internal::zero_scan_select(iov::internal::simd_level::avx2);   // tests
//
// Every kernel has the same shape, so one can be checked against another:
// short buffers in one or two overlapping (or masked) loads, up to eight
// vectors ORed with one test; otherwise the first vector (the AVX levels'
// blocks loop tests its head alone only when unaligned: no probes of the
// middle and the last vectors, which slow a streaming scan of 4 KiB pieces on
// AMD Zen 5), then an aligned body that ORs several vectors before each test,
// so the loop runs at the load ports' rate rather than the branch's.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "iov/internal/zero_scan_simd.hpp"
#include "iov/zero_scan.hpp"
#include "outofline_walk.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define IOV_ZERO_SCAN_X86 1
#define IOV_TARGET_AVX2 __attribute__((target("avx2,bmi,bmi2")))
#define IOV_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,bmi,bmi2")))
#endif

namespace iov::internal {
namespace {

using u8 = unsigned char;

inline uint64_t load64(const u8* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint32_t load32(const u8* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline const T* align_down(const T* p, uintptr_t a) {
  return reinterpret_cast<const T*>(reinterpret_cast<uintptr_t>(p) & ~(a - 1));
}

constexpr size_t kPageBytes = 4096;  // the MMU's page, for the prefetch below

inline const u8* first_mismatch_bytes(const u8* p, u8 c, size_t len) {
  for (size_t k = 0; k < len; k++)
    if (p[k] != c) return p + k;
  return nullptr;
}

// OR of every byte of a buffer shorter than 16 bytes, by overlapping loads.
inline uint64_t or_short(const u8* p, size_t len) {
  if (len >= 8) return load64(p) | load64(p + len - 8);
  if (len >= 4) return load32(p) | load32(p + len - 4);
  if (len == 0) return 0;
  return p[0] | p[len / 2] | p[len - 1];  // covers 1..3 bytes
}

// memchr_inv of a buffer shorter than 16 bytes.
inline const u8* memchr_inv_short(const u8* p, u8 c, size_t len) {
  if (len < 8) return first_mismatch_bytes(p, c, len);
  const uint64_t pat = 0x0101010101010101ull * c;
  if (load64(p) != pat) return first_mismatch_bytes(p, c, 8);
  if (load64(p + len - 8) != pat) return first_mismatch_bytes(p + len - 8, c, 8);
  return nullptr;
}

// ---- portable: 16-byte vectors -----------------------------------------

// 16-byte vectors of the compiler's (SSE2 on x86-64, NEON on arm64): a
// streaming scan is bounded by the cache lines in flight, and 8-byte loads
// fill the load buffer with four times the entries per line (measured on a
// Xeon, 256 MiB streaming: 1.19x ISA-L's time with 8-byte loads). Eight
// vectors are ORed per test.
using vec16 = uint64_t __attribute__((vector_size(16)));
inline vec16 load_vec16(const u8* p) {
  vec16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

const void* memchr_inv_portable(const void* s, int c, size_t len) {
  const u8* p = static_cast<const u8*>(s);
  const u8 b = static_cast<u8>(c);
  if (len < 16) return memchr_inv_short(p, b, len);
  const uint64_t pat = 0x0101010101010101ull * b;
  const vec16 patv = {pat, pat};
  size_t k = 0;
  for (; k + 128 <= len; k += 128) {
    const u8* q = p + k;
    vec16 x = (((load_vec16(q) ^ patv) | (load_vec16(q + 16) ^ patv)) |
               ((load_vec16(q + 32) ^ patv) | (load_vec16(q + 48) ^ patv))) |
              (((load_vec16(q + 64) ^ patv) | (load_vec16(q + 80) ^ patv)) |
               ((load_vec16(q + 96) ^ patv) | (load_vec16(q + 112) ^ patv)));
    if ((x[0] | x[1]) != 0) return first_mismatch_bytes(q, b, 128);
  }
  for (; k + 8 <= len; k += 8)
    if (load64(p + k) != pat) return first_mismatch_bytes(p + k, b, 8);
  return first_mismatch_bytes(p + k, b, len - k);
}

// No probes of the middle and last bytes before the loop (the AVX-512
// level's shape): over 256 MiB of 4 KiB bvec pages streaming on AMD Zen 5
// (iov-bench) they held the scan at 1.76-1.79x ISA-L's time, 1.10-1.21x
// without; even a probe of the first byte alone cost as much (a loop of our
// own). The loop's first test fails on a non-zero head as early.
bool mem_is_zero_portable(const void* s, size_t len) {
  const u8* p = static_cast<const u8*>(s);
  if (len < 16) return or_short(p, len) == 0;
  size_t k = 0;
  for (; k + 128 <= len; k += 128) {
    vec16 x = ((load_vec16(p + k) | load_vec16(p + k + 16)) | (load_vec16(p + k + 32) | load_vec16(p + k + 48))) |
              ((load_vec16(p + k + 64) | load_vec16(p + k + 80)) | (load_vec16(p + k + 96) | load_vec16(p + k + 112)));
    if ((x[0] | x[1]) != 0) return false;
  }
  vec16 x = {};
  for (; k + 16 <= len; k += 16) x |= load_vec16(p + k);
  return (x[0] | x[1] | or_short(p + k, len - k)) == 0;
}

#ifdef IOV_ZERO_SCAN_X86
// ---- AVX2: 32-byte vectors -----------------------------------------------

IOV_TARGET_AVX2 inline __m256i load256(const u8* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
IOV_TARGET_AVX2 inline __m128i load128(const u8* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
// Bit k set where byte k of v differs from the pattern.
IOV_TARGET_AVX2 inline uint32_t neq_mask256(__m256i v, __m256i pat) {
  return ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, pat)));
}
IOV_TARGET_AVX2 inline uint32_t neq_mask128(__m128i v, __m128i pat) {
  return ~static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, pat))) & 0xffff;
}
// The OR of the four vectors at p.
IOV_TARGET_AVX2 inline __m256i or128(const u8* p) {
  return _mm256_or_si256(_mm256_or_si256(load256(p), load256(p + 32)),
                         _mm256_or_si256(load256(p + 64), load256(p + 96)));
}
// The bytes of v that differ from the pattern, as non-zero bytes (an XOR; for
// the zero pattern, v itself).
template <bool Zero>
IOV_TARGET_AVX2 inline __m256i diff256(__m256i v, __m256i pat) {
  return Zero ? v : _mm256_xor_si256(v, pat);
}

// Always inlined, as memchr_inv_avx512_t: mem_is_zero runs it on a page on
// CPUs other than AMD (kernels_of), where a call and its stack frame cost the
// Xeon's AVX-512 level 0.55 against 0.47 of the read limit (bvec pages tiled).
template <bool Zero>
IOV_TARGET_AVX2 IOV_ALWAYS_INLINE const void* memchr_inv_avx2_t(const u8* p, u8 c, size_t len) {
  if (len < 32) {
    if (len < 16) return memchr_inv_short(p, c, len);
    const __m128i pat = _mm_set1_epi8(static_cast<char>(c));
    if (uint32_t m = neq_mask128(load128(p), pat)) return p + __builtin_ctz(m);
    if (uint32_t m = neq_mask128(load128(p + len - 16), pat)) return p + len - 16 + __builtin_ctz(m);
    return nullptr;
  }
  const __m256i pat = _mm256_set1_epi8(static_cast<char>(c));
  if (uint32_t m = neq_mask256(load256(p), pat)) return p + __builtin_ctz(m);
  // Aligned body from the first boundary past the head to the last one before the end;
  // the (overlapping) tail vector covers the rest.
  const u8* q = align_down(p + 32, 32);
  const u8* e = align_down(p + len, 32);
  for (; e - q >= 128; q += 128) {
    __m256i x = _mm256_or_si256(
        _mm256_or_si256(diff256<Zero>(load256(q), pat), diff256<Zero>(load256(q + 32), pat)),
        _mm256_or_si256(diff256<Zero>(load256(q + 64), pat), diff256<Zero>(load256(q + 96), pat)));
    if (!_mm256_testz_si256(x, x)) {
      for (int v = 0; v < 4; v++)
        if (uint32_t m = neq_mask256(load256(q + 32 * v), pat)) return q + 32 * v + __builtin_ctz(m);
    }
  }
  for (; q < e; q += 32)
    if (uint32_t m = neq_mask256(load256(q), pat)) return q + __builtin_ctz(m);
  const u8* t = p + len - 32;  // everything before it matched, so its first mismatch is the first
  if (uint32_t m = neq_mask256(load256(t), pat)) return t + __builtin_ctz(m);
  return nullptr;
}

IOV_TARGET_AVX2 const void* memchr_inv_avx2(const void* s, int c, size_t len) {
  const u8* p = static_cast<const u8*>(s);
  return c == 0 ? memchr_inv_avx2_t<true>(p, 0, len) : memchr_inv_avx2_t<false>(p, static_cast<u8>(c), len);
}

// The loop of mem_is_zero past a few vectors at the AVX levels: one test per
// block of four vectors, from the buffer's start when it is aligned (a page),
// the last block overlapping the end; no probes of the middle and the tail,
// and no head test of its own before the loop. Over 256 MiB of 4 KiB bvec
// pages streaming on AMD Zen 5 each of those cost: the probes held the AVX2
// level at 1.24-1.25x ISA-L's time; a head test and a body of 256 bytes a
// test, 1.21-1.39x in a loop of our own (CPU time), where this shape (ISA-L's
// AVX2 loop's: 128 bytes a test) runs at 0.92-1.04x, and unrolled to two
// tests an iteration at 1.16-1.26x. An unaligned buffer has its head tested
// alone and the rest aligned, which keeps the scan in L1 at the aligned speed
// (0.65 of ISA-L's time against 0.84 with every load unaligned). Past a
// page, a page at a time with the next page's first line prefetched: flat
// over 256 MiB streaming, 0.73-0.82 of ISA-L's time against 0.98-1.03
// without (the same loop of our own). A walk's page takes this loop on AMD
// only (kernels_of). len >= Block::kBytes.
//
// Block (avx2_block, avx512_block) gives the block's size, its vectors'
// alignment and its test, compiled for its level; this template has no
// target of its own and is inlined into a caller that has the block's, where
// GCC 12 inlines the test as well (objdump: no call per block).
template <class Block>
IOV_ALWAYS_INLINE bool is_zero_blocks(const u8* p, size_t len) {
  const u8* q = p;
  const u8* last = p + len - Block::kBytes;
  if (reinterpret_cast<uintptr_t>(p) & (Block::kAlign - 1)) {
    if (Block::nonzero(p)) return false;
    q = align_down(p + Block::kBytes, Block::kAlign);
  }
  while (last - q > static_cast<std::ptrdiff_t>(kPageBytes)) {
    const u8* next_page = align_down(q + kPageBytes, kPageBytes);  // before last
    _mm_prefetch(reinterpret_cast<const char*>(next_page), _MM_HINT_T0);
    for (; q < next_page; q += Block::kBytes)
      if (Block::nonzero(q)) return false;
  }
  for (; q < last; q += Block::kBytes)
    if (Block::nonzero(q)) return false;
  return !Block::nonzero(last);
}

struct avx2_block {  // four 32-byte vectors
  static constexpr size_t kBytes = 128, kAlign = 32;
  IOV_TARGET_AVX2 static bool nonzero(const u8* p) {
    __m256i v = or128(p);
    return !_mm256_testz_si256(v, v);
  }
};

// PageInBlocks: a walk's page (257 bytes to 4 KiB here) takes the blocks loop
// (AMD) or memchr_inv's (others); see kernels_of.
template <bool PageInBlocks>
IOV_TARGET_AVX2 bool mem_is_zero_avx2(const void* s, size_t len) {
  const u8* p = static_cast<const u8*>(s);
  if (len < 32) {
    if (len < 16) return or_short(p, len) == 0;
    __m128i v = _mm_or_si128(load128(p), load128(p + len - 16));
    return _mm_testz_si128(v, v);
  }
  if (len <= 256) {  // up to eight vectors ORed with one test
    __m256i v = _mm256_or_si256(load256(p), load256(p + len - 32));
    for (size_t k = 32; k < len - 32; k += 32) v = _mm256_or_si256(v, load256(p + k));
    return _mm256_testz_si256(v, v);
  }
  if (!PageInBlocks && len <= kPageBytes) return !memchr_inv_avx2_t<true>(p, 0, len);
  return is_zero_blocks<avx2_block>(p, len);
}

// ---- AVX-512: 64-byte vectors, masked loads for the short case -----------

IOV_TARGET_AVX512 inline __m512i load512(const u8* p) { return _mm512_loadu_si512(p); }
IOV_TARGET_AVX512 inline bool nonzero512(__m512i v) { return _mm512_test_epi64_mask(v, v) != 0; }
template <bool Zero>
IOV_TARGET_AVX512 inline __m512i diff512(__m512i v, __m512i pat) {
  return Zero ? v : _mm512_xor_si512(v, pat);
}
// Bytes [0, len) of p, len <= 64, without touching the bytes past len: the
// masked-off lanes of a masked load never fault.
IOV_TARGET_AVX512 inline __m512i load512_partial(const u8* p, size_t len, __mmask64* k) {
  *k = _bzhi_u64(~0ull, static_cast<unsigned>(len));
  return _mm512_maskz_loadu_epi8(*k, p);
}

template <bool Zero>
IOV_TARGET_AVX512 IOV_ALWAYS_INLINE const void* memchr_inv_avx512_t(const u8* p, u8 c, size_t len) {
  const __m512i pat = _mm512_set1_epi8(static_cast<char>(c));
  if (len <= 64) {
    __mmask64 k;
    __m512i v = load512_partial(p, len, &k);
    uint64_t m = _mm512_mask_cmpneq_epi8_mask(k, v, pat);
    return m ? p + _tzcnt_u64(m) : nullptr;
  }
  if (uint64_t m = _mm512_cmpneq_epi8_mask(load512(p), pat)) return p + _tzcnt_u64(m);
  const u8* q = align_down(p + 64, 64);
  const u8* e = align_down(p + len, 64);
  for (; e - q >= 256; q += 256) {
    __m512i x = _mm512_or_si512(
        _mm512_or_si512(diff512<Zero>(load512(q), pat), diff512<Zero>(load512(q + 64), pat)),
        _mm512_or_si512(diff512<Zero>(load512(q + 128), pat), diff512<Zero>(load512(q + 192), pat)));
    if (nonzero512(x)) {
      for (int v = 0; v < 4; v++)
        if (uint64_t m = _mm512_cmpneq_epi8_mask(load512(q + 64 * v), pat)) return q + 64 * v + _tzcnt_u64(m);
    }
  }
  for (; q < e; q += 64)
    if (uint64_t m = _mm512_cmpneq_epi8_mask(load512(q), pat)) return q + _tzcnt_u64(m);
  const u8* t = p + len - 64;
  if (uint64_t m = _mm512_cmpneq_epi8_mask(load512(t), pat)) return t + _tzcnt_u64(m);
  return nullptr;
}

IOV_TARGET_AVX512 const void* memchr_inv_avx512(const void* s, int c, size_t len) {
  const u8* p = static_cast<const u8*>(s);
  return c == 0 ? memchr_inv_avx512_t<true>(p, 0, len)
                : memchr_inv_avx512_t<false>(p, static_cast<u8>(c), len);
}

// The OR of the four vectors at p.
IOV_TARGET_AVX512 inline __m512i or256(const u8* p) {
  return _mm512_or_si512(_mm512_or_si512(load512(p), load512(p + 64)),
                         _mm512_or_si512(load512(p + 128), load512(p + 192)));
}

struct avx512_block {  // four 64-byte vectors
  static constexpr size_t kBytes = 256, kAlign = 64;
  IOV_TARGET_AVX512 static bool nonzero(const u8* p) { return nonzero512(or256(p)); }
};

// A walk's page (more than a sector, at most 4 KiB) takes the AVX2 blocks
// loop on AMD, before any 512-bit instruction, and memchr_inv's loop (the
// first vector tested alone, then 256 bytes a test) elsewhere (kernels_of);
// a longer buffer the blocks loop with 64-byte vectors, 256 bytes a test.
// Flat, the wide loop wins: over 256 MiB streaming on AMD Zen 5 0.63
// [0.56-0.72] of the read limit against the AVX2 loop's 0.69 [0.61-0.78], in
// L1 (16 KiB) 0.34 of ISA-L's time against 0.65.
template <bool PageInBlocks>
IOV_TARGET_AVX512 bool mem_is_zero_avx512(const void* s, size_t len) {
  const u8* p = static_cast<const u8*>(s);
  if (len > 512 && len <= kPageBytes)
    return PageInBlocks ? is_zero_blocks<avx2_block>(p, len) : !memchr_inv_avx512_t<true>(p, 0, len);
  if (len <= 64) {
    __mmask64 k;
    return !nonzero512(load512_partial(p, len, &k));
  }
  __m512i v = _mm512_or_si512(load512(p), load512(p + len - 64));
  if (len <= 128) return !nonzero512(v);
  if (len <= 512) {  // a sector: up to eight vectors ORed with one test
    for (size_t k = 64; k < len - 64; k += 64) v = _mm512_or_si512(v, load512(p + k));
    return !nonzero512(v);
  }
  return is_zero_blocks<avx512_block>(p, len);
}
#endif  // IOV_ZERO_SCAN_X86

// ---- dispatch --------------------------------------------------------------

struct kernels {
  memchr_inv_fn memchr_inv;
  mem_is_zero_fn mem_is_zero;
};

// A walk's page (4 KiB or less, past the short cases) takes the loop that
// ran fastest on its CPU's vendor at each AVX level: no loop tried was the
// fastest on both CPUs measured (iov-bench, CPU time; 256 MiB of 4 KiB bvec
// pages, medians of the per-run ratios to the read limit).
// - AMD: the blocks loop (is_zero_blocks), and at the AVX-512 level the AVX2
//   one. On Zen 5, streaming, every other loop ran slower in the walk: at the
//   AVX2 level the head probes and 256 bytes a test 1.15 [0.97-1.37] against
//   0.99 [0.88-1.18] (22 runs); at the AVX-512 level the probes and 512 bytes
//   a test 1.09 [1.00-1.22], 64-byte vectors from the page's start 128 bytes
//   a test 1.12 [1.04-1.47], where the AVX2 blocks loop ran 0.95 [0.91-1.04]
//   (ten runs each); in a loop of our own calling the kernel page after page,
//   without the walk, they ran as fast (0.91-1.03).
// - Others: memchr_inv's loop for the zero byte, the first vector tested
//   alone. On an Intel Xeon (family 6, model 207), tiled / streaming, the
//   blocks loop ran at 0.80 / 0.87 at the AVX-512 level and 0.82 / 0.87 at
//   the AVX2 level, this loop at 0.47 / 0.72 and 0.66 / 0.79 (seven runs,
//   interleaved); 64-byte blocks from the page's start 0.60-0.67 / 0.77-0.79
//   (docs/operations.md, the table of the Xeon 6/207 of 2026-12-07).
// memchr_inv keeps its loop at every level: in the blocks loop's shape it ran
// slower on the Xeon (iov_iter_skip_zeroes over bvec pages tiled, AVX-512
// 0.68 against 0.45, AVX2 0.67 against 0.65).
kernels kernels_of(simd_level l) {
#ifdef IOV_ZERO_SCAN_X86
  const bool amd = simd_cpu().amd;
  if (l == simd_level::avx512) return {memchr_inv_avx512, amd ? mem_is_zero_avx512<true> : mem_is_zero_avx512<false>};
  if (l == simd_level::avx2) return {memchr_inv_avx2, amd ? mem_is_zero_avx2<true> : mem_is_zero_avx2<false>};
#endif
  (void)l;
  return {memchr_inv_portable, mem_is_zero_portable};
}

void install(simd_level l) {
  kernels k = kernels_of(l);
  memchr_inv_impl.store(k.memchr_inv, std::memory_order_relaxed);
  mem_is_zero_impl.store(k.mem_is_zero, std::memory_order_relaxed);
}

// The trial: 16 KiB of zeroes scanned as four 4 KiB pieces (a walk over bvec
// pages) and once flat, in L1 after the untimed run (simd_trial_zeroes: its
// own pages, no stack used).
uint32_t trial(simd_level l) {
  constexpr size_t kPiece = 4096, kPieces = kSimdTrialBytes / kPiece;
  const u8* zeroes = simd_trial_zeroes();
  const mem_is_zero_fn scan = kernels_of(l).mem_is_zero;
  const uint64_t t0 = simd_trial_clock_ns();
  bool zero = scan(zeroes, kSimdTrialBytes);
  for (size_t k = 0; k < kPieces; k++)
    zero &= scan(zeroes + k * kPiece, kPiece);
  const uint64_t t1 = simd_trial_clock_ns();
  asm volatile("" ::"r"(zero));
  return static_cast<uint32_t>(t1 - t0);
}

// The measured choice leaves the AVX-512 level out on AMD family 25 (Zen 4;
// Zen 3 lacks it). Zen 4 executes each 512-bit load as two 256-bit halves, so
// in L1, where the trial runs, the AVX2 level reads as fast (64 bytes a cycle
// either way) and the 5 % margin keeps avx512; streaming, where a trial
// cannot look (a buffer past the L3 would take milliseconds), the AVX-512
// scan took 1.37-1.55x the read limit there (2026-12-03) while the portable
// level ran at ISA-L's speed. Nor did the order in L1 tell the streaming
// order on Zen 5: the AVX-512 loop twice the AVX2 one's speed in L1 and
// slower over bvec pages streaming, until a page took the AVX2 loop
// (mem_is_zero_avx512).
// IOV_SIMD=avx512 still forces it.
bool rule(simd_level l) {
  const simd_cpu_id cpu = simd_cpu();
  return l != simd_level::avx512 || !(cpu.amd && cpu.family == 25);
}

constinit simd_dispatch<install, trial, cpu_supports, rule> dispatch;

const void* memchr_inv_resolve(const void* p, int c, size_t len) {
  dispatch.resolve();
  return memchr_inv_impl.load(std::memory_order_relaxed)(p, c, len);
}
bool mem_is_zero_resolve(const void* p, size_t len) {
  dispatch.resolve();
  return mem_is_zero_impl.load(std::memory_order_relaxed)(p, len);
}

}  // namespace

// Constant-initialized: valid before any static constructor runs.
constinit std::atomic<memchr_inv_fn> memchr_inv_impl{memchr_inv_resolve};
constinit std::atomic<mem_is_zero_fn> mem_is_zero_impl{mem_is_zero_resolve};

bool zero_scan_select(simd_level l) { return dispatch.select(l); }
simd_level zero_scan_level() { return dispatch.level(); }
simd_choice zero_scan_choice() { return dispatch.choice(); }
simd_choice zero_scan_choose() { return dispatch.choose(); }

template size_t outofline_walk::run<is_zero_steps>(iov_iter*, size_t, void*, void*);
template size_t outofline_walk::run<skip_zeroes_steps>(iov_iter*, size_t, void*, void*);

}  // namespace iov::internal
