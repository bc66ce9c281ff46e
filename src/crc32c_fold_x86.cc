// crc32c_fold_x86.cc: the folding levels of the CRC engine (see
// internal/crc32c_simd.hpp): how a crc32c_state takes in a piece, with or
// without copying it, and how it is reduced to 32 bits.
//
//   iov::internal::crc32c_update_avx512(&st, p, len);   // through crc32c_update() on a state of that level
//
// The state. The bytes fed so far are M = A T: A, a whole number of blocks
// (256 bytes at the avx512 level, 128 at avx2), is stood for by a block-sized
// window W with W == A (mod P) as polynomials, and the tail T by its CRC,
// tail_crc = crc32c(0, T). Then
//   crc32c(0, M) == crc32c(0, W) * x^(8 |T|) ^ tail_crc
// (an unfolded state holds the CRC itself in tail_crc). A piece of a block or
// more goes into the window: its first block, with tail_crc xored into its
// first four bytes (which stands for T), replaces the window moved on by
// |T| + one block; each next block replaces the window moved on by one block.
// Moving on is the fold of internal/crc32c_gf2.hpp, two carry-less multiplies
// per 16 bytes, with one constant pair for each distance, so the first block
// of a piece costs what every other does. The rest of the piece, under a
// block, extends tail_crc with the crc32 instruction. Nothing is reduced until
// crc32c_final().
//
// Each update exists once, as a template over whether it also copies: the
// fused form stores each load as it folds it.
#include <atomic>
#include <cstring>

#include "iov/crc32c.hpp"
#include "iov/internal/crc32c_gf2.hpp"
#include "iov/internal/crc32c_simd.hpp"
#include "iov/iterate.hpp"
#include "outofline_walk.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// The avx2 level is VEX-encoded: legacy SSE code right after ISA-L, which
// leaves the upper vector state dirty, would stall.
#define IOV_TARGET_CLMUL __attribute__((target("avx2,pclmul,sse4.2")))
#define IOV_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.2,bmi2")))
// The avx2 level's 256-bit form, where the CPU has VPCLMULQDQ without AVX-512 (AMD Zen 3).
#define IOV_TARGET_VCLMUL __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2")))
// What both levels have: the tails and the final reduction.
#define IOV_TARGET_TAIL __attribute__((target("pclmul,sse4.2")))

namespace iov::internal {
namespace {

using gf2::fold_constant;
using gf2::kFoldBytes;

constexpr size_t kWindow = 256;

// Whether the avx2 level folds with 256-bit VPCLMULQDQ (crc32c_select_wide_clmul).
bool cpu_has_vpclmulqdq() { return __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2"); }
std::atomic<bool> wide_clmul{cpu_has_vpclmulqdq()};

// crc32c(crc, p[0, len)) with the crc32 instruction, one chain.
IOV_TARGET_TAIL IOV_ALWAYS_INLINE uint32_t crc32_bytes(uint32_t crc, const unsigned char* p, size_t len) {
  uint64_t c = crc;
  for (; len >= 8; len -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  if (len & 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    c32 = _mm_crc32_u32(c32, w);
    p += 4;
  }
  if (len & 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    c32 = _mm_crc32_u16(c32, w);
    p += 2;
  }
  if (len & 1) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

// crc * x^(8 bytes) mod P for bytes under 512: one carry-less multiply by the
// fold table's x^(8 bytes - 33), then the crc32 instruction (as
// crc32c_extend_zeroes does).
IOV_TARGET_TAIL IOV_ALWAYS_INLINE uint32_t shift_crc(uint32_t crc, size_t bytes) {
  __m128i k = _mm_cvtsi32_si128(static_cast<int>(kFoldBytes.by(bytes).hi));
  __m128i v = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(crc)), k, 0x00);
  return static_cast<uint32_t>(_mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(v))));
}

// The tail extended over p[0, len), len under a block. One chain of the crc32
// instruction takes 3 cycles per 8 bytes, and a walk of short pieces would
// chain them all through tail_crc; so the piece's own CRC is taken from zero,
// in three chains from 48 bytes, and only the tail's CRC moved over the piece
// waits for the last piece:
//   crc32c(c, B) == c * x^(8 |B|) ^ crc32c(0, B).
IOV_TARGET_TAIL IOV_ALWAYS_INLINE void tail_update(crc32c_state* st, const unsigned char* p, size_t len) {
  uint32_t own;
  if (len < 48) {
    if (len <= 24 || !st->tail_crc) {  // no longer a chain than the multiply's, or nothing to move
      st->tail_crc = crc32_bytes(st->tail_crc, p, len);
      st->tail_len += len;
      return;
    }
    own = crc32_bytes(0, p, len);
  } else {
    const size_t third = len / 24 * 8;
    uint64_t a = 0, b = 0, c = 0;
    for (size_t k = 0; k < third; k += 8) {
      uint64_t wa, wb, wc;
      std::memcpy(&wa, p + k, 8);
      std::memcpy(&wb, p + third + k, 8);
      std::memcpy(&wc, p + 2 * third + k, 8);
      a = _mm_crc32_u64(a, wa);
      b = _mm_crc32_u64(b, wb);
      c = _mm_crc32_u64(c, wc);
    }
    c = crc32_bytes(static_cast<uint32_t>(c), p + 3 * third, len - 3 * third);
    own = shift_crc(static_cast<uint32_t>(a), len - third) ^ shift_crc(static_cast<uint32_t>(b), len - 2 * third) ^
          static_cast<uint32_t>(c);
  }
  st->tail_crc = (st->tail_crc ? shift_crc(st->tail_crc, len) : 0) ^ own;
  st->tail_len += len;
}

// The CRC of one 16-byte lane moved on by `bytes` (under 512): the fold with no
// data, then the lane's own CRC from zero, which is the CRC of everything it
// stands for.
IOV_TARGET_TAIL IOV_ALWAYS_INLINE uint32_t lane_crc(__m128i x, size_t bytes) {
  fold_constant k = kFoldBytes.by(bytes);
  __m128i kk = _mm_set_epi64x(k.hi, k.lo);
  __m128i y = _mm_xor_si128(_mm_clmulepi64_si128(x, kk, 0x00), _mm_clmulepi64_si128(x, kk, 0x11));
  uint64_t c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(y)));
  return static_cast<uint32_t>(_mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(y, 1))));
}

// crc32c(0, W) * x^(8 tail_len) ^ tail_crc, given W reduced to one lane x. A
// tail of 256 bytes or more (many short pieces) is past the table: extend.
IOV_TARGET_TAIL IOV_ALWAYS_INLINE uint32_t finish(__m128i x, const crc32c_state* st) {
  if (IOV_LIKELY(st->tail_len < kWindow)) return lane_crc(x, st->tail_len) ^ st->tail_crc;
  return crc32c_extend_zeroes(lane_crc(x, 0), st->tail_len) ^ st->tail_crc;
}

// ---- avx512: the window as four 64-byte registers ---------------------------

// (The maskz forms here: GCC 12's plain ones warn about their undefined merge source.)
IOV_TARGET_AVX512 IOV_ALWAYS_INLINE __m512i broadcast(fold_constant k) {
  return _mm512_maskz_broadcast_i32x4(0xffff, _mm_set_epi64x(k.hi, k.lo));
}
// acc moved on by the constant's distance, xored into data.
IOV_TARGET_AVX512 IOV_ALWAYS_INLINE __m512i fold512(__m512i acc, __m512i k, __m512i data) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00), _mm512_clmulepi64_epi128(acc, k, 0x11),
                                   data, 0x96);
}
// 64 bytes at s + off, also stored at d + off when copying.
template <bool Copy>
IOV_TARGET_AVX512 IOV_ALWAYS_INLINE __m512i load64(unsigned char* d, const unsigned char* s, size_t off) {
  __m512i v = _mm512_loadu_si512(s + off);
  if constexpr (Copy) _mm512_storeu_si512(d + off, v);
  return v;
}

IOV_TARGET_AVX512 uint32_t final_avx512(const crc32c_state* st) {
  const __m512i* w = reinterpret_cast<const __m512i*>(st->window);
  // Register j lies (3 - j) * 64 bytes before the last: move each there at once.
  __m512i t = fold512(w[0], broadcast(kFoldBytes.by(192)), _mm512_load_si512(w + 3));
  t = fold512(w[1], broadcast(kFoldBytes.by(128)), t);
  t = fold512(w[2], broadcast(kFoldBytes.by(64)), t);
  // Four lanes into one: lane j lies (3 - j) * 16 bytes before lane 3.
  const fold_constant k48 = kFoldBytes.by(48), k32 = kFoldBytes.by(32), k16 = kFoldBytes.by(16);
  const __m512i klanes = _mm512_set_epi64(0, 0, k16.hi, k16.lo, k32.hi, k32.lo, k48.hi, k48.lo);
  t = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(t, klanes, 0x00), _mm512_clmulepi64_epi128(t, klanes, 0x11),
                                _mm512_maskz_mov_epi64(0xc0, t), 0x96);
  t = _mm512_xor_si512(t, _mm512_maskz_shuffle_i64x2(0xff, t, t, 0x4e));  // lanes 0^2, 1^3
  __m128i x = _mm_xor_si128(_mm512_maskz_extracti32x4_epi32(0xf, t, 0), _mm512_maskz_extracti32x4_epi32(0xf, t, 1));
  return finish(x, st);
}

// Under 256 bytes: into the tail. The copy in 64-byte moves, the last one masked.
template <bool Copy>
IOV_TARGET_AVX512 IOV_ALWAYS_INLINE void tail_avx512(crc32c_state* st, unsigned char* d, const unsigned char* s,
                                                     size_t len) {
  if constexpr (Copy) {
    size_t p = 0;
    for (; len - p > 64; p += 64) _mm512_storeu_si512(d + p, _mm512_loadu_si512(s + p));
    __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(len - p));
    _mm512_mask_storeu_epi8(d + p, m, _mm512_maskz_loadu_epi8(m, s + p));
  }
  tail_update(st, s, len);
}

// The whole windows of a piece of 256 bytes or more into the state; returns
// how many bytes that was. The first 256 bytes replace the window moved on
// over the tail too (by the usual constant when there is no tail), with the
// tail's CRC xored into their first four bytes. General: any state whose tail
// is under 256 bytes; else the common one, a folded state without a tail,
// where the window is all there is to read.
template <bool Copy, bool General>
IOV_TARGET_AVX512 IOV_ALWAYS_INLINE size_t windows_avx512(crc32c_state* st, unsigned char* d,
                                                          const unsigned char* s, size_t len) {
  // Not masked loads: the window was stored by the last piece, and a masked
  // load waits for the store to retire where a plain one is forwarded.
  __m512i* w = reinterpret_cast<__m512i*>(st->window);
  const __m512i k = broadcast(kFoldBytes.by(kWindow));
  __m512i f0, f1, f2, f3;
  size_t p = 0;
  if (!General || st->folded) {
    f0 = _mm512_load_si512(w), f1 = _mm512_load_si512(w + 1);
    f2 = _mm512_load_si512(w + 2), f3 = _mm512_load_si512(w + 3);
  } else {
    f0 = f1 = f2 = f3 = _mm512_setzero_si512();  // an unfolded window is zero (and maybe not initialized)
  }
  if (General) {
    const __m512i k1 = st->folded && st->tail_len ? broadcast(kFoldBytes.by(st->tail_len + kWindow)) : k;
    const __m512i seed = _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(st->tail_crc)));
    f0 = fold512(f0, k1, _mm512_xor_si512(load64<Copy>(d, s, 0), seed));
    f1 = fold512(f1, k1, load64<Copy>(d, s, 64));
    f2 = fold512(f2, k1, load64<Copy>(d, s, 128));
    f3 = fold512(f3, k1, load64<Copy>(d, s, 192));
    p = kWindow;
  }
  // Four registers 256 bytes apart keep VPCLMULQDQ's latency off the path.
  for (; len - p >= kWindow; p += kWindow) {
    f0 = fold512(f0, k, load64<Copy>(d, s, p));
    f1 = fold512(f1, k, load64<Copy>(d, s, p + 64));
    f2 = fold512(f2, k, load64<Copy>(d, s, p + 128));
    f3 = fold512(f3, k, load64<Copy>(d, s, p + 192));
  }
  _mm512_store_si512(w, f0);
  _mm512_store_si512(w + 1, f1);
  _mm512_store_si512(w + 2, f2);
  _mm512_store_si512(w + 3, f3);
  if (General) {
    st->folded = true;
    st->tail_len = 0;
    st->tail_crc = 0;  // (folded without a tail, it is zero already)
  }
  return p;
}

// Any state, any piece: out of line, so that the common case below is one
// straight path. A tail past the fold table's reach goes to
// crc32c_update_restarting() first, as a jump, so no frame is built.
template <bool Copy>
IOV_TARGET_AVX512 IOV_NOINLINE void update_general_avx512(crc32c_state* st, unsigned char* d,
                                                          const unsigned char* s, size_t len) {
  size_t p = 0;
  if (len >= kWindow) {
    if (IOV_UNLIKELY(st->folded && st->tail_len >= kWindow)) {
      if constexpr (Copy) return crc32c_copy_update_restarting(st, d, s, len);
      else return crc32c_update_restarting(st, s, len);
    }
    p = windows_avx512<Copy, true>(st, d, s, len);
  }
  if (p < len) tail_avx512<Copy>(st, Copy ? d + p : nullptr, s + p, len - p);
}

// The common case, a whole number of windows after a whole number of them (a
// walk of 512-byte sectors or of pages): two flags read, the window loaded,
// folded and stored back; nothing else written, no taken branch.
template <bool Copy>
IOV_TARGET_AVX512 IOV_ALWAYS_INLINE void update_avx512(crc32c_state* st, unsigned char* d, const unsigned char* s,
                                                       size_t len) {
  if (IOV_UNLIKELY(len < kWindow || !st->folded || st->tail_len)) return update_general_avx512<Copy>(st, d, s, len);
  size_t p = windows_avx512<Copy, false>(st, d, s, len);
  if (IOV_UNLIKELY(p < len)) tail_avx512<Copy>(st, Copy ? d + p : nullptr, s + p, len - p);
}

// ---- avx512: a whole walk with the window in registers -----------------------
//
// crc32c_update() loads the window from the state and stores it back for
// every piece: a walk of 512-byte sectors pays about a tenth of its time for
// that. The register form of a walk (crc32c_registers_walk, crc32c.hpp) runs
// the same steps on this accumulator instead, which keeps the window in four
// registers from one piece to the next: the walk is inlined whole into
// crc32c_run_in_registers() (flatten), steps included, so that a piece of
// whole windows after a state without a tail is folded in place; any other
// piece stores the registers, goes through update_avx512() and loads them
// back. The registers are assigned on every path (zero when the state has no
// window), so that none is kept alive across that call, which would put them
// on the stack.
struct window_registers {
  __m512i f0, f1, f2, f3;
  crc32c_state* st;
  bool live;  // the registers hold the window, and the state has no tail

  IOV_TARGET_AVX512 IOV_ALWAYS_INLINE void load() {
    const __m512i* w = reinterpret_cast<const __m512i*>(st->window);
    live = st->folded && !st->tail_len;
    if (live) {
      f0 = _mm512_load_si512(w), f1 = _mm512_load_si512(w + 1);
      f2 = _mm512_load_si512(w + 2), f3 = _mm512_load_si512(w + 3);
    } else {
      f0 = f1 = f2 = f3 = _mm512_setzero_si512();
    }
  }
  IOV_TARGET_AVX512 IOV_ALWAYS_INLINE void store() const {
    if (!live) return;
    __m512i* w = reinterpret_cast<__m512i*>(st->window);
    _mm512_store_si512(w, f0), _mm512_store_si512(w + 1, f1);
    _mm512_store_si512(w + 2, f2), _mm512_store_si512(w + 3, f3);
  }
  // s[0, len) into the CRC (and to d, when copying).
  template <bool Copy>
  IOV_TARGET_AVX512 IOV_ALWAYS_INLINE void piece(unsigned char* d, const unsigned char* s, size_t len) {
    if (IOV_LIKELY(live && len && len % kWindow == 0)) {
      const __m512i k = broadcast(kFoldBytes.by(kWindow));
      __m512i a0 = f0, a1 = f1, a2 = f2, a3 = f3;
      for (size_t p = 0; p < len; p += kWindow) {
        a0 = fold512(a0, k, load64<Copy>(d, s, p));
        a1 = fold512(a1, k, load64<Copy>(d, s, p + 64));
        a2 = fold512(a2, k, load64<Copy>(d, s, p + 128));
        a3 = fold512(a3, k, load64<Copy>(d, s, p + 192));
      }
      f0 = a0, f1 = a1, f2 = a2, f3 = a3;
      return;
    }
    store();
    update_avx512<Copy>(st, d, s, len);
    load();
  }
};

// The accumulator's side of the steps (crc32c.hpp), found by argument-dependent
// lookup. Not always_inline: the steps are compiled without the avx512 target
// too, and flatten inlines these where the caller has it.
IOV_TARGET_AVX512 void crc32c_update(window_registers* r, const void* src, size_t len) {
  r->piece<false>(nullptr, static_cast<const unsigned char*>(src), len);
}
IOV_TARGET_AVX512 void crc32c_copy_update(window_registers* r, void* dst, const void* src, size_t len) {
  r->piece<true>(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), len);
}

// A pair of the CRC's steps on the state, as the same pair on the registers.
template <class Steps>
struct on_registers;
template <template <class> class S>
struct on_registers<S<crc32c_state>> {
  using type = S<window_registers>;
};

// W over Steps with st's window in registers (crc32c_run_in_registers()).
template <class W, class Steps>
IOV_TARGET_AVX512 __attribute__((flatten)) size_t run_in_registers(iov_iter* i, size_t len, void* priv,
                                                                   crc32c_state* st) {
  window_registers r;
  r.st = st;
  r.load();
  const size_t n = W::template run<typename on_registers<Steps>::type>(i, len, priv, &r);
  r.store();
  return n;
}

// ---- avx2: the window as eight 16-byte lanes --------------------------------
//
// With sixteen registers, eight accumulators 16 bytes apart fold a 128-byte
// block at a time, so this level keeps its window in the last 128 bytes of the
// 256 (the first 128 are never read or written: as if zero). The first block
// of a piece moves the window on by the tail plus 128 bytes.

constexpr size_t kBlock = 128;

IOV_TARGET_CLMUL IOV_ALWAYS_INLINE __m128i fold128(__m128i acc, __m128i k, __m128i data) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)), data);
}
IOV_TARGET_CLMUL IOV_ALWAYS_INLINE __m128i constant128(fold_constant k) { return _mm_set_epi64x(k.hi, k.lo); }

template <bool Copy>
IOV_TARGET_CLMUL IOV_ALWAYS_INLINE __m128i load16(unsigned char* d, const unsigned char* s, size_t off) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + off));
  if constexpr (Copy) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + off), v);
  return v;
}

IOV_TARGET_CLMUL uint32_t final_clmul(const crc32c_state* st) {
  const __m128i* w = reinterpret_cast<const __m128i*>(st->window + kBlock);
  // Lane j lies (7 - j) * 16 bytes before the last: move each there at once.
  __m128i x = _mm_load_si128(w + 7);
  for (int j = 0; j < 7; j++) x = fold128(_mm_load_si128(w + j), constant128(kFoldBytes.by(16 * (7 - j))), x);
  return finish(x, st);
}

// The same eight lanes as four 32-byte registers (lane j is half j % 2 of
// register j / 2, which is how they lie in memory), folded two at a time
// with 256-bit VPCLMULQDQ: the same arithmetic, the same state.
IOV_TARGET_VCLMUL IOV_ALWAYS_INLINE __m256i fold256(__m256i acc, __m256i k, __m256i data) {
  return _mm256_xor_si256(
      _mm256_xor_si256(_mm256_clmulepi64_epi128(acc, k, 0x00), _mm256_clmulepi64_epi128(acc, k, 0x11)), data);
}
IOV_TARGET_VCLMUL IOV_ALWAYS_INLINE __m256i constant256(fold_constant k) {
  return _mm256_broadcastsi128_si256(_mm_set_epi64x(k.hi, k.lo));
}
template <bool Copy>
IOV_TARGET_VCLMUL IOV_ALWAYS_INLINE __m256i load32(unsigned char* d, const unsigned char* s, size_t off) {
  __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + off));
  if constexpr (Copy) _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + off), v);
  return v;
}

// The blocks of a piece of 128 bytes or more into the window; returns how
// many bytes that was. As blocks_clmul below, two lanes an instruction.
template <bool Copy>
IOV_TARGET_VCLMUL IOV_ALWAYS_INLINE size_t blocks_vclmul(crc32c_state* st, unsigned char* d, const unsigned char* s,
                                                    size_t len) {
  __m256i* w = reinterpret_cast<__m256i*>(st->window + kBlock);
  __m256i f[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) f[j] = st->folded ? _mm256_load_si256(w + j) : _mm256_setzero_si256();
  const __m256i k = constant256(kFoldBytes.by(kBlock));
  const __m256i k1 = st->folded && st->tail_len ? constant256(kFoldBytes.by(st->tail_len + kBlock)) : k;
  const __m256i seed = _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_cvtsi32_si128(static_cast<int>(st->tail_crc)), 0);
  f[0] = fold256(f[0], k1, _mm256_xor_si256(load32<Copy>(d, s, 0), seed));
#pragma GCC unroll 4
  for (int j = 1; j < 4; j++) f[j] = fold256(f[j], k1, load32<Copy>(d, s, 32 * j));
  size_t p = kBlock;
  for (; len - p >= kBlock; p += kBlock) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) f[j] = fold256(f[j], k, load32<Copy>(d, s, p + 32 * j));
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) _mm256_store_si256(w + j, f[j]);
  return p;
}

// The blocks of a piece of 128 bytes or more into the window, the first
// moving it on over the tail too, with the tail's CRC xored into its first
// four bytes; returns how many bytes that was. The caller settles the state.
template <bool Copy>
IOV_TARGET_CLMUL IOV_ALWAYS_INLINE size_t blocks_clmul(crc32c_state* st, unsigned char* d, const unsigned char* s,
                                                       size_t len) {
  __m128i* w = reinterpret_cast<__m128i*>(st->window + kBlock);
  __m128i f[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) f[j] = st->folded ? _mm_load_si128(w + j) : _mm_setzero_si128();
  const __m128i k = constant128(kFoldBytes.by(kBlock));
  const __m128i k1 = st->folded && st->tail_len ? constant128(kFoldBytes.by(st->tail_len + kBlock)) : k;
  f[0] = fold128(f[0], k1, _mm_xor_si128(load16<Copy>(d, s, 0), _mm_cvtsi32_si128(static_cast<int>(st->tail_crc))));
#pragma GCC unroll 8
  for (int j = 1; j < 8; j++) f[j] = fold128(f[j], k1, load16<Copy>(d, s, 16 * j));
  size_t p = kBlock;
  for (; len - p >= kBlock; p += kBlock) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) f[j] = fold128(f[j], k, load16<Copy>(d, s, p + 16 * j));
  }
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) _mm_store_si128(w + j, f[j]);
  return p;
}

// Wide: two lanes an instruction (blocks_vclmul), the kernel that states in
// the wide form call directly. Both forms are compiled for the wide target,
// which adds only the 256-bit VPCLMULQDQ intrinsics: the narrow form uses
// none, and runs where the CPU lacks them.
template <bool Copy, bool Wide>
IOV_TARGET_VCLMUL IOV_ALWAYS_INLINE void update_clmul(crc32c_state* st, unsigned char* d, const unsigned char* s,
                                                      size_t len) {
  size_t p = 0;
  if (len >= kBlock) {
    if (IOV_UNLIKELY(st->folded && st->tail_len >= kWindow)) {  // see crc32c_update_restarting()
      if constexpr (Copy) return crc32c_copy_update_restarting(st, d, s, len);
      else return crc32c_update_restarting(st, s, len);
    }
    if constexpr (Wide)
      p = blocks_vclmul<Copy>(st, d, s, len);
    else
      p = blocks_clmul<Copy>(st, d, s, len);
    st->folded = true;
    st->tail_len = 0;
    st->tail_crc = 0;
  }
  if (p < len) {
    if constexpr (Copy) std::memcpy(d + p, s + p, len - p);
    tail_update(st, s + p, len - p);
  }
}

}  // namespace

IOV_TARGET_AVX512 void crc32c_update_avx512(crc32c_state* st, const void* src, size_t len) {
  update_avx512<false>(st, nullptr, static_cast<const unsigned char*>(src), len);
}
IOV_TARGET_AVX512 void crc32c_copy_update_avx512(crc32c_state* st, void* dst, const void* src, size_t len) {
  update_avx512<true>(st, static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), len);
}
IOV_TARGET_AVX512 uint32_t crc32c_final_avx512(const crc32c_state* st) { return final_avx512(st); }
// Declared in crc32c.hpp without the target, which a template's later
// definition cannot add: a jump to the function compiled for it.
template <class W, class Steps>
size_t crc32c_run_in_registers(iov_iter* i, size_t len, void* priv, crc32c_state* st) {
  return run_in_registers<W, Steps>(i, len, priv, st);
}

// The register form of each walk crc32c_registers_compiled names, for each pair.
#define IOV_CRC32C_IN_REGISTERS(W)                                                                                 \
  template size_t crc32c_run_in_registers<W, crc32c_steps<crc32c_state>>(iov_iter*, size_t, void*, crc32c_state*); \
  template size_t crc32c_run_in_registers<W, crc32c_copy_to_iter_steps<crc32c_state>>(iov_iter*, size_t, void*,    \
                                                                                      crc32c_state*);              \
  template size_t crc32c_run_in_registers<W, crc32c_copy_from_iter_steps<crc32c_state>>(iov_iter*, size_t, void*,  \
                                                                                        crc32c_state*);
IOV_CRC32C_IN_REGISTERS(inline_walk)
IOV_CRC32C_IN_REGISTERS(ubuf_first_walk)
IOV_CRC32C_IN_REGISTERS(outofline_walk)
#undef IOV_CRC32C_IN_REGISTERS

IOV_TARGET_VCLMUL void crc32c_update_clmul(crc32c_state* st, const void* src, size_t len) {
  update_clmul<false, false>(st, nullptr, static_cast<const unsigned char*>(src), len);
}
IOV_TARGET_VCLMUL void crc32c_copy_update_clmul(crc32c_state* st, void* dst, const void* src, size_t len) {
  update_clmul<true, false>(st, static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), len);
}
IOV_TARGET_VCLMUL void crc32c_update_vclmul(crc32c_state* st, const void* src, size_t len) {
  update_clmul<false, true>(st, nullptr, static_cast<const unsigned char*>(src), len);
}
IOV_TARGET_VCLMUL void crc32c_copy_update_vclmul(crc32c_state* st, void* dst, const void* src, size_t len) {
  update_clmul<true, true>(st, static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), len);
}
IOV_TARGET_CLMUL uint32_t crc32c_final_clmul(const crc32c_state* st) { return final_clmul(st); }

bool crc32c_select_wide_clmul(bool wide) {
  if (wide && !cpu_has_vpclmulqdq()) return false;
  wide_clmul.store(wide, std::memory_order_relaxed);
  return true;
}
bool crc32c_wide_clmul() { return wide_clmul.load(std::memory_order_relaxed); }

}  // namespace iov::internal

#endif  // x86-64
