// crc32c.cc: what crc32c.hpp does not inline — the GF(2) arithmetic behind
// crc32c_extend_zeroes() (and so crc32c_combine()), the one-pass copy+CRC
// kernels behind the fused iterator forms, and their run-time dispatch.
//
//   uint32_t c = iov::crc32c_combine(crc_a, crc_b, len_b);            // O(log len_b)
//   iov::internal::crc32c_select(iov::internal::simd_level::portable);   // tests
//
// Conventions. A 32-bit CRC value is reflected: bit 31 - d holds the
// coefficient of x^d, and P = x^32 + 0x1EDC6F41 is 0x82F63B78 reflected. The
// raw update is crc32c(c, M) = (c * x^|M| + M) * x^32 mod P (|M| in bits, the
// first bit of M the highest power), so a run of n zero bytes multiplies the
// CRC by x^(8n), and crc32c(c, M) == crc32c(0, M with c xored into its first
// four bytes) — the two facts the code below stands on.
#include <atomic>
#include <cstring>

#include "iov/crc32c.hpp"
#include "iov/internal/crc32c_simd.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define IOV_CRC32C_X86 1
// The avx2 level's multiply is VEX-encoded (target avx2): legacy SSE code
// right after ISA-L, which leaves the upper vector state dirty, would stall.
#define IOV_TARGET_CLMUL __attribute__((target("avx2,pclmul,sse4.2")))
#define IOV_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.2,bmi2")))
#endif

namespace iov {
namespace internal {
namespace {

// ---- GF(2) arithmetic mod P, at compile time --------------------------------

constexpr uint32_t kPoly = 0x82F63B78u;  // P without x^32, reflected
constexpr uint32_t kOne = 0x80000000u;   // the polynomial 1

constexpr uint32_t mul_x(uint32_t v) { return (v >> 1) ^ ((v & 1) ? kPoly : 0); }
// The inverse of mul_x: P has a constant term, so x is invertible mod P.
constexpr uint32_t div_x(uint32_t v) {
  uint32_t low = v >> 31;  // the x^0 coefficient of v is what x * u carried out of x^31
  return ((v ^ (low ? kPoly : 0)) << 1) | low;
}
static_assert(mul_x(div_x(0x12345678u)) == 0x12345678u);

// x^e mod P for small |e| (fold constants; e may be negative).
constexpr uint32_t xpow(long e) {
  uint32_t v = kOne;
  for (; e > 0; e--) v = mul_x(v);
  for (; e < 0; e++) v = div_x(v);
  return v;
}

// a * b mod P, shift-and-add: 32 steps, no branch on the data.
constexpr uint32_t multmodp(uint32_t a, uint32_t b) {
  uint32_t p = 0;
  for (int k = 31; k >= 0; k--) {  // bit k of a holds x^(31 - k): walk up from x^0
    p ^= b & (0u - ((a >> k) & 1));
    b = mul_x(b);
  }
  return p;
}

struct x8pow_tables {
  uint32_t plain[64];  // x^(8 * 2^k) mod P
  uint32_t clmul[64];  // x^(8 * 2^k - 33) mod P: see extend_zeroes_clmul
};
constexpr x8pow_tables make_x8pow_tables() {
  x8pow_tables t{};
  const uint32_t x_minus_33 = xpow(-33);
  uint32_t v = xpow(8);
  for (int k = 0; k < 64; k++) {
    t.plain[k] = v;
    t.clmul[k] = multmodp(v, x_minus_33);
    v = multmodp(v, v);
  }
  return t;
}
constexpr x8pow_tables kX8Pow = make_x8pow_tables();
static_assert(kX8Pow.plain[1] == xpow(16) && kX8Pow.plain[5] == xpow(256));

uint32_t extend_zeroes_portable(uint32_t crc, size_t n) {
  for (; n; n &= n - 1) crc = multmodp(crc, kX8Pow.plain[__builtin_ctzll(n)]);
  return crc;
}

// ---- one-pass copy + CRC ----------------------------------------------------

// Copies a block, then CRCs it while it is still in L1 (the destination: the
// bytes just written). Blocks are small enough for any L1.
uint32_t copy_portable(void* dst, const void* src, size_t len, uint32_t crc) {
  constexpr size_t kBlock = 8192;
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  while (len) {
    size_t n = len < kBlock ? len : kBlock;
    std::memcpy(d, s, n);
    crc = crc32c(crc, d, n);
    d += n;
    s += n;
    len -= n;
  }
  return crc;
}

#ifdef IOV_CRC32C_X86

// With the product a * b of two reflected 32-bit values in the low half of a
// carry-less multiply (degree <= 62, which as a reflected 64-bit word is
// a * b * x), the crc32 instruction on that word gives a * b * x^33 mod P; so
// the table holds x^(8 * 2^k - 33) and each step is two instructions.
IOV_TARGET_CLMUL uint32_t extend_zeroes_clmul(uint32_t crc, size_t n) {
  for (; n; n &= n - 1) {
    __m128i a = _mm_cvtsi32_si128(static_cast<int>(crc));
    __m128i b = _mm_cvtsi32_si128(static_cast<int>(kX8Pow.clmul[__builtin_ctzll(n)]));
    crc = static_cast<uint32_t>(_mm_crc32_u64(0, _mm_cvtsi128_si64(_mm_clmulepi64_si128(a, b, 0))));
  }
  return crc;
}

// Folding. A 128-bit lane of message, loaded little-endian, is reflected too:
// its low qword H holds x^127..x^64 and its high qword L x^63..x^0. Moving the
// lane D bits further on multiplies it by x^D:
//   H * x^(64 + D) + L * x^D  ==  clmul(H, x^(D + 31)) ^ clmul(L, x^(D - 33))   (mod P)
// (a reflected clmul carries an extra x, and a 32-bit constant in a qword's
// low half an extra x^32). The sum has degree < 96 and replaces the lane of
// message D bits on, which it is xored into. Each lane's constant pair is
// {lo: x^(D + 31), hi: x^(D - 33)}.
struct fold_constant {
  uint64_t lo, hi;
};
constexpr fold_constant fold_by(long bits) { return {xpow(bits + 31), xpow(bits - 33)}; }
constexpr fold_constant kFold128 = fold_by(128), kFold256 = fold_by(256), kFold384 = fold_by(384),
                        kFold512 = fold_by(512), kFold2048 = fold_by(2048);

IOV_TARGET_AVX512 inline __m512i broadcast(fold_constant k) {
  auto lo = static_cast<long long>(k.lo), hi = static_cast<long long>(k.hi);
  return _mm512_set4_epi64(hi, lo, hi, lo);
}
// acc moved on by the constant's distance, xored into data.
IOV_TARGET_AVX512 inline __m512i fold512(__m512i acc, __m512i k, __m512i data) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00), _mm512_clmulepi64_epi128(acc, k, 0x11),
                                   data, 0x96);
}
IOV_TARGET_AVX512 inline __m128i fold128(__m128i acc, __m128i k, __m128i data) {
  return _mm_ternarylogic_epi64(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11), data,
                                0x96);
}
IOV_TARGET_AVX512 inline __m512i copy64(unsigned char* d, const unsigned char* s) {
  __m512i v = _mm512_loadu_si512(s);
  _mm512_storeu_si512(d, v);
  return v;
}

// Under 64 bytes: one masked load and store, and the crc32 instruction over
// the source bytes (in L1 now).
IOV_TARGET_AVX512 inline uint32_t copy_tail_avx512(unsigned char* d, const unsigned char* s, size_t len,
                                                   uint32_t crc) {
  __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(len));
  _mm512_mask_storeu_epi8(d, m, _mm512_maskz_loadu_epi8(m, s));
  uint64_t c = crc;
  for (; len >= 8; len -= 8, s += 8) {
    uint64_t w;
    std::memcpy(&w, s, 8);
    c = _mm_crc32_u64(c, w);
  }
  for (; len; len--) c = _mm_crc32_u8(static_cast<uint32_t>(c), *s++);
  return static_cast<uint32_t>(c);
}

// Each 64-byte load is stored, then folded: four accumulators 256 bytes apart
// keep VPCLMULQDQ's latency off the path, so copy and CRC share one pass at
// the multiplier's rate (two VPCLMULQDQ per 64 bytes).
IOV_TARGET_AVX512 uint32_t copy_avx512(void* dst, const void* src, size_t len, uint32_t crc) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  if (len < 64)
    return copy_tail_avx512(d, s, len, crc);

  const __m512i k512 = broadcast(kFold512);
  __m512i a0 = _mm512_xor_si512(copy64(d, s), _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(crc))));
  size_t p = 64;
  if (len >= 256) {
    const __m512i k2048 = broadcast(kFold2048);
    __m512i a1 = copy64(d + 64, s + 64), a2 = copy64(d + 128, s + 128), a3 = copy64(d + 192, s + 192);
    for (p = 256; len - p >= 256; p += 256) {
      __m512i b0 = copy64(d + p, s + p), b1 = copy64(d + p + 64, s + p + 64);
      __m512i b2 = copy64(d + p + 128, s + p + 128), b3 = copy64(d + p + 192, s + p + 192);
      a0 = fold512(a0, k2048, b0);
      a1 = fold512(a1, k2048, b1);
      a2 = fold512(a2, k2048, b2);
      a3 = fold512(a3, k2048, b3);
    }
    a0 = fold512(fold512(fold512(a0, k512, a1), k512, a2), k512, a3);
  }
  for (; len - p >= 64; p += 64) a0 = fold512(a0, k512, copy64(d + p, s + p));

  // Four lanes into one: lane j lies (3 - j) * 128 bits before lane 3.
  const __m512i klanes = _mm512_set_epi64(0, 0, kFold128.hi, kFold128.lo, kFold256.hi, kFold256.lo, kFold384.hi,
                                          kFold384.lo);
  __m512i t = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a0, klanes, 0x00),
                                       _mm512_clmulepi64_epi128(a0, klanes, 0x11), _mm512_maskz_mov_epi64(0xc0, a0),
                                       0x96);
  // (The maskz forms: GCC 12's plain ones warn about their undefined merge source.)
  t = _mm512_xor_si512(t, _mm512_maskz_shuffle_i64x2(0xff, t, t, 0x4e));  // lanes 0^2, 1^3
  __m128i x = _mm_xor_si128(_mm512_maskz_extracti32x4_epi32(0xf, t, 0), _mm512_maskz_extracti32x4_epi32(0xf, t, 1));

  const __m128i k128 = _mm_set_epi64x(static_cast<long long>(kFold128.hi), static_cast<long long>(kFold128.lo));
  for (; len - p >= 16; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + p));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + p), v);
    x = fold128(x, k128, v);
  }
  // The folded 16 bytes stand for everything so far: their CRC from 0 is the CRC.
  uint64_t c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(x)));
  c = _mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(x, 1)));
  return copy_tail_avx512(d + p, s + p, len - p, static_cast<uint32_t>(c));
}

#endif  // IOV_CRC32C_X86

// ---- dispatch ---------------------------------------------------------------

// Beyond simd_level's own features: the avx2 kernels need PCLMULQDQ and
// SSE4.2, the avx512 ones VPCLMULQDQ as well.
bool supports(simd_level l) {
  if (!cpu_supports(l)) return false;
#ifdef IOV_CRC32C_X86
  if (l >= simd_level::avx2 && !(__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2")))
    return false;
  if (l >= simd_level::avx512 && !__builtin_cpu_supports("vpclmulqdq")) return false;
#endif
  return true;
}

constexpr int kUnresolved = -1;
// The level in use: one relaxed load and a predictable branch per call, and
// direct calls only (no indirect branch, which a hardened build would pay a
// retpoline for on every piece).
constinit std::atomic<int> installed_level{kUnresolved};

// The best level at or below the environment's cap that these kernels can run.
simd_level default_level() {
  simd_level l = default_simd_level();
  while (l != simd_level::portable && !supports(l)) l = static_cast<simd_level>(static_cast<int>(l) - 1);
  return l;
}

IOV_ALWAYS_INLINE int level() {
  int l = installed_level.load(std::memory_order_relaxed);
  if (IOV_UNLIKELY(l == kUnresolved)) {
    l = static_cast<int>(default_level());
    installed_level.store(l, std::memory_order_relaxed);
  }
  return l;
}

}  // namespace

uint32_t crc32c_copy(void* dst, const void* src, size_t len, uint32_t crc) {
#ifdef IOV_CRC32C_X86
  if (IOV_LIKELY(level() == static_cast<int>(simd_level::avx512)))
    return copy_avx512(dst, src, len, crc);
#endif
  return copy_portable(dst, src, len, crc);
}

bool crc32c_select(simd_level l) {
  if (!supports(l)) return false;
  installed_level.store(static_cast<int>(l), std::memory_order_relaxed);
  return true;
}

simd_level crc32c_level() { return static_cast<simd_level>(level()); }

}  // namespace internal

uint32_t crc32c_extend_zeroes(uint32_t crc, size_t n) {
#ifdef IOV_CRC32C_X86
  if (internal::level() >= static_cast<int>(internal::simd_level::avx2))
    return internal::extend_zeroes_clmul(crc, n);
#endif
  return internal::extend_zeroes_portable(crc, n);
}

}  // namespace iov
