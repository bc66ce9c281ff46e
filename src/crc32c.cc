// crc32c.cc: what crc32c.hpp does not inline — the streaming state's
// crc32c_init, crc32c_update_zeroes and crc32c_final, the updates of every
// level but avx512 (whose kernel crc32c_update() calls directly), the portable
// level, the GF(2) zero extension behind crc32c_extend_zeroes() (and so
// crc32c_combine()), the choice of level, and the compiled-once walks of the
// iterator forms (outofline_walk).
// The folding kernels are in crc32c_fold_x86.cc; the arithmetic they share in
// internal/crc32c_gf2.hpp.
//
//   uint32_t c = iov::crc32c_combine(crc_a, crc_b, len_b);            // O(log len_b)
//   iov::internal::crc32c_select(iov::internal::simd_level::portable);   // tests
#include <atomic>
#include <cstring>

#include "iov/crc32c.hpp"
#include "iov/internal/crc32c_gf2.hpp"
#include "iov/internal/crc32c_simd.hpp"
#include "outofline_walk.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define IOV_CRC32C_X86 1
// The avx2 level's multiply is VEX-encoded (target avx2): legacy SSE code
// right after ISA-L, which leaves the upper vector state dirty, would stall.
#define IOV_TARGET_CLMUL __attribute__((target("avx2,pclmul,sse4.2")))
#endif

namespace iov {
namespace internal {
namespace {

using gf2::kX8Pow;

uint32_t extend_zeroes_portable(uint32_t crc, size_t n) {
  for (; n; n &= n - 1) crc = gf2::multmodp(crc, kX8Pow.plain[__builtin_ctzll(n)]);
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
#endif

// ---- the portable level: a running CRC -------------------------------------

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

// ---- dispatch ---------------------------------------------------------------

// Beyond simd_level's own features: the avx2 kernels need PCLMULQDQ and
// SSE4.2, the avx512 ones VPCLMULQDQ as well.
bool supports(simd_level l) {
  if (!cpu_supports(l)) return false;
#ifdef IOV_CRC32C_X86
  if (l >= simd_level::avx2 && !(__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2")))
    return false;
  if (l >= simd_level::avx512 && !__builtin_cpu_supports("vpclmulqdq")) return false;
#else
  if (l != simd_level::portable) return false;
#endif
  return true;
}

// New states take the installed level: one relaxed load and a predictable
// branch per walk. A state then dispatches on its own copy with direct calls
// only (no indirect branch, which a hardened build would pay a retpoline for
// on every piece), so installing a level stores nothing else.
void install(simd_level) {}

// The code a state of level l holds (the avx2 level's wide form where it is on).
uint8_t state_level(simd_level l) {
#ifdef IOV_CRC32C_X86
  if (l == simd_level::avx2 && crc32c_wide_clmul()) return kCrc32cAvx2Wide;
#endif
  return static_cast<uint8_t>(l);
}

// Starts a state at `crc` with the kernels of level l: crc32c_init() at the
// installed level, the trial at the level it times.
IOV_ALWAYS_INLINE void init_at(crc32c_state* st, uint32_t crc, simd_level l) {
  st->tail_len = 0;
  st->tail_crc = crc;
  st->level = state_level(l);
  st->folded = false;
}

uint32_t trial(simd_level l);
constinit simd_dispatch<install, trial, supports> dispatch;

constexpr uint8_t kAvx2 = static_cast<uint8_t>(simd_level::avx2);

// The folding kernels move the window over a tail of under 256 bytes only (the
// fold table's reach): past that, a piece that goes into the window first
// turns the window and tail back into a running CRC (the kernels jump to
// crc32c_update_restarting() for it). Out of line, as the portable level is,
// so that the dispatch stays bare and the kernels leaves, with no frame to
// build per piece.
IOV_NOINLINE void restart(crc32c_state* st) {
  st->tail_crc = crc32c_final(st);
  st->folded = false;
}
IOV_NOINLINE void update_portable(crc32c_state* st, const void* data, size_t len) {
  st->tail_crc = crc32c(st->tail_crc, data, len);
}
IOV_NOINLINE void copy_update_portable(crc32c_state* st, void* dst, const void* src, size_t len) {
  st->tail_crc = copy_portable(dst, src, len, st->tail_crc);
}

// The trial: 8 KiB in 512-byte pieces (sectors, where the levels differ most:
// the portable level pays a flat call per piece), of the zero scan's trial
// bytes (simd_trial_zeroes: pages of their own, no stack used). The state is
// started by init_at(), not by crc32c_init(), which would ask for the level
// being chosen.
uint32_t trial(simd_level l) {
  constexpr size_t kBytes = 8192, kPiece = 512, kPieces = kBytes / kPiece;
  static_assert(kBytes <= kSimdTrialBytes);
  const unsigned char* trial_bytes = simd_trial_zeroes();
  crc32c_state st;
  init_at(&st, ~0u, l);
  const uint64_t t0 = simd_trial_clock_ns();
  for (size_t k = 0; k < kPieces; k++)
    crc32c_update(&st, trial_bytes + k * kPiece, kPiece);
  uint32_t crc = crc32c_final(&st);
  const uint64_t t1 = simd_trial_clock_ns();
  asm volatile("" ::"r"(crc));
  return static_cast<uint32_t>(t1 - t0);
}

}  // namespace

bool crc32c_select(simd_level l) { return dispatch.select(l); }
simd_level crc32c_level() { return dispatch.level(); }
simd_choice crc32c_choice() { return dispatch.choice(); }
simd_choice crc32c_choose() { return dispatch.choose(); }

void crc32c_update_restarting(crc32c_state* st, const void* data, size_t len) {
  restart(st);
  crc32c_update(st, data, len);
}
void crc32c_copy_update_restarting(crc32c_state* st, void* dst, const void* src, size_t len) {
  restart(st);
  crc32c_copy_update(st, dst, src, len);
}

void crc32c_update_other(crc32c_state* st, const void* data, size_t len) {
#ifdef IOV_CRC32C_X86
  if (st->level == kAvx2) return crc32c_update_clmul(st, data, len);
#endif
  update_portable(st, data, len);
}
void crc32c_copy_update_other(crc32c_state* st, void* dst, const void* src, size_t len) {
#ifdef IOV_CRC32C_X86
  if (st->level == kAvx2) return crc32c_copy_update_clmul(st, dst, src, len);
#endif
  copy_update_portable(st, dst, src, len);
}

#ifndef IOV_CRC32C_X86
// No state is ever at the avx512 level here; the symbols keep crc32c.hpp's
// inline dispatch linking.
void crc32c_update_avx512(crc32c_state* st, const void* data, size_t len) { crc32c_update_other(st, data, len); }
void crc32c_copy_update_avx512(crc32c_state* st, void* dst, const void* src, size_t len) {
  crc32c_copy_update_other(st, dst, src, len);
}
void crc32c_update_vclmul(crc32c_state* st, const void* data, size_t len) { crc32c_update_other(st, data, len); }
void crc32c_copy_update_vclmul(crc32c_state* st, void* dst, const void* src, size_t len) {
  crc32c_copy_update_other(st, dst, src, len);
}
#endif

// The memory form of the compiled-once walks (below the avx512 level); their
// register form is in crc32c_fold_x86.cc.
template size_t outofline_walk::run<crc32c_steps<crc32c_state>>(iov_iter*, size_t, void*, void*);
template size_t outofline_walk::run<crc32c_copy_to_iter_steps<crc32c_state>>(iov_iter*, size_t, void*, void*);
template size_t outofline_walk::run<crc32c_copy_from_iter_steps<crc32c_state>>(iov_iter*, size_t, void*, void*);

}  // namespace internal

// ---- the streaming form -----------------------------------------------------

void crc32c_init(crc32c_state* st, uint32_t crc) {
  internal::init_at(st, crc, internal::dispatch.level());
}

// Folded, the CRC is crc32c(0, window) * x^(8 * tail_len) ^ tail_crc: n more
// zero bytes multiply the tail's CRC by x^(8n) and lengthen the tail. A tail
// that would reach 256 bytes is first merged with the window into a running
// CRC (the folding kernels move the window over tails under 256 bytes only).
void crc32c_update_zeroes(crc32c_state* st, size_t n) {
  if (!n) return;
  if (st->folded && (st->tail_len >= 256 || n >= 256 - st->tail_len)) {
    st->tail_crc = crc32c_final(st);
    st->folded = false;
  }
  if (st->tail_crc) st->tail_crc = crc32c_extend_zeroes(st->tail_crc, n);
  if (st->folded) st->tail_len += n;
}

uint32_t crc32c_final(const crc32c_state* st) {
  if (!st->folded) return st->tail_crc;
#ifdef IOV_CRC32C_X86
  if (IOV_LIKELY(st->level == internal::kCrc32cAvx512)) return internal::crc32c_final_avx512(st);
  return internal::crc32c_final_clmul(st);
#else
  __builtin_unreachable();  // only the folding levels fold
#endif
}

uint32_t crc32c_extend_zeroes(uint32_t crc, size_t n) {
#ifdef IOV_CRC32C_X86
  if (internal::dispatch.level() >= internal::simd_level::avx2)
    return internal::extend_zeroes_clmul(crc, n);
#endif
  return internal::extend_zeroes_portable(crc, n);
}

}  // namespace iov
