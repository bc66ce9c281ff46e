// crc32c.hpp: CRC-32C (Castagnoli, the iSCSI/ext4/btrfs CRC) over memory,
// over runs of zero bytes that are never read, fed piece by piece (the
// streaming form), over an iterator, and fused with copy_to_iter/copy_from_iter
// so that each byte is read from memory once.
//
//   uint32_t crc = ~0u;
//   size_t n = iov::crc32c_and_copy_from_iter(buf, len, &crc, &it);  // copy, and CRC what was copied
//   crc = iov::crc32c_extend_zeroes(crc, hole_len);                   // a hole, never touched
//   uint32_t standard = ~crc;                                         // the iSCSI value
//
// Kernel semantics: crc32c(crc, p, len) is the raw reflected update, with no
// inversion before or after; the standard CRC-32C of a buffer is
// ~crc32c(~0u, p, len). One flat buffer goes to ISA-L's crc32_iscsi() (it
// dispatches up to AVX-512 VPCLMULQDQ; same convention). The iterator forms
// and the drivers' CRC service feed the pieces of a walk to one crc32c_state
// (below): each piece is folded into running accumulators and the CRC is
// reduced to 32 bits once, at the end, so it costs what one flat call does
// however the bytes are cut. Each iterator form is one body over a walk
// (internal/walk.hpp).
#pragma once

#ifdef IOV_HEADER_ONLY
#error "iov/crc32c.hpp needs the compiled library (run-time SIMD dispatch): link iov::iov (pkg-config iov), not iov::headers (iov-headers)"
#include "iov: link iov::iov"
#endif

#include <isa-l/crc.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "iov/config.hpp"
#include "iov/internal/crc32c_simd.hpp"
#include "iov/internal/fault_inject.hpp"
#include "iov/internal/walk.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"

namespace iov {

namespace internal {
// ISA-L's AVX-512 kernels return with the upper halves of the vector
// registers dirty (no vzeroupper), and the legacy-SSE code that runs next
// (compiler-made struct copies, libc) then pays a state transition of
// hundreds of cycles: measured, 4x on a loop of 4 KiB pieces. Clear them
// where the CPU has AVX (where it does not, ISA-L dirtied nothing). Right
// after a call, no vector register holds a live value.
IOV_ALWAYS_INLINE void isal_vzeroupper() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx"))
    asm volatile("vzeroupper" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                 "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
#endif
}
}  // namespace internal

inline uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  // crc32_iscsi() takes an int length: feed it 1 GiB at a time.
  constexpr size_t kChunk = size_t{1} << 30;
  if (!len)
    return crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (IOV_UNLIKELY(len > kChunk)) {
    crc = crc32_iscsi(p, static_cast<int>(kChunk), crc);
    p += kChunk;
    len -= kChunk;
  }
  crc = crc32_iscsi(p, static_cast<int>(len), crc);
  internal::isal_vzeroupper();
  return crc;
}

// crc32c(crc, n zero bytes) without reading anything: crc * x^(8n) mod P, in
// O(log n) multiplications by the precomputed x^(8 * 2^k).
uint32_t crc32c_extend_zeroes(uint32_t crc, size_t n);

// crc32c(crc1, B), given crc2 == crc32c(0, B) and len2 == |B|: the update is
// linear, so the CRC of A then B is A's extended over |B| zeroes, xor B's.
inline uint32_t crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2) {
  return crc32c_extend_zeroes(crc1, len2) ^ crc2;
}

// ---- the streaming form ------------------------------------------------------
//
// A CRC fed piece by piece, for callers that cut the bytes themselves. The
// result is crc32c(crc, all the pieces in order) whatever the cut: pieces of
// any length (zero included) at any address.
//
//   iov::crc32c_state st;
//   iov::crc32c_init(&st, ~0u);
//   iov::crc32c_update(&st, hdr, sizeof hdr);
//   iov::crc32c_update_zeroes(&st, hole_len);          // a hole, never read
//   iov::crc32c_update(&st, payload, payload_len);
//   uint32_t standard = ~iov::crc32c_final(&st);
//
// Cost. The state is not a finished CRC but the folding accumulators: a
// window congruent to the bytes so far in whole blocks (256 bytes with AVX-512
// VPCLMULQDQ, 128 with PCLMULQDQ alone), plus the CRC of the bytes after it
// (the tail, under a block unless many short pieces came in a row).
// crc32c_update() is one call that reads each byte once: each whole block of
// the piece is folded into the window at the carry-less multiplier's rate, as
// in one flat call over all the bytes (the first block moves the window over
// the previous tail too, at no extra cost); the last bytes under a block go
// into the tail with the crc32 instruction. There is no per-piece setup or
// reduction: fed 512-byte sectors by hand, it runs within about 10% of one
// flat call, 4 KiB pages within 2%; the iterator forms at the AVX-512 level
// keep the window in registers across a walk (within 4% for sectors). Bytes
// short of a block go through the crc32 instruction, a few times slower than
// folding, and each piece costs a call: 100-byte pieces take about 4x a flat
// call's time, 1 KiB ones 1.25x (ISA-L called per piece: 18x and 3.8x). The
// one reduction to 32 bits (a few dozen cycles) is in crc32c_final(), which
// leaves the state as it was; a tail grown past 256 bytes is reduced once,
// when the next whole block arrives. crc32c_update_zeroes() costs O(log n)
// and reads nothing. crc32c_init() does not clear the window. Where the CPU
// has no carry-less multiply (or IOV_SIMD=portable), the state is a running
// CRC updated by ISA-L per piece.
//
// The state is 320 bytes, 64-byte aligned: a local of the walk. Its members
// belong to the engine (src/crc32c*.cc); a state is used from one thread at a
// time and may be copied to fork the CRC.
struct crc32c_state {
  alignas(64) unsigned char window[256];  // congruent to the bytes before the tail, if folded
  uint64_t tail_len;                      // bytes since the window
  uint32_t tail_crc;                      // folded: crc32c(0, tail); else crc32c(crc, everything)
  uint8_t level;                          // the simd_level of the kernels that fill it (or kCrc32cAvx2Wide)
  bool folded;                            // false: the window is not used (and not initialized)
};

// Starts a CRC at `crc` (the raw value, as crc32c()'s first argument).
void crc32c_init(crc32c_state* st, uint32_t crc);
// Extends the CRC over data[0, len). (Inline: the level's branch, then the
// kernel's call, with nothing else between a walk's pieces.)
inline void crc32c_update(crc32c_state* st, const void* data, size_t len) {
  if (IOV_LIKELY(st->level == internal::kCrc32cAvx512))
    internal::crc32c_update_avx512(st, data, len);
  else if (IOV_LIKELY(st->level == internal::kCrc32cAvx2Wide))
    internal::crc32c_update_vclmul(st, data, len);
  else
    internal::crc32c_update_other(st, data, len);
}
// Extends the CRC over n zero bytes without reading any, in O(log n).
void crc32c_update_zeroes(crc32c_state* st, size_t n);
// crc32c(crc, everything fed so far). The state is unchanged: feeding may go on.
uint32_t crc32c_final(const crc32c_state* st);

namespace internal {
// dst <- src[0, len), and the state extended over those bytes, reading each
// once; the buffers do not overlap. The fused iterator forms' step.
inline void crc32c_copy_update(crc32c_state* st, void* dst, const void* src, size_t len) {
  if (IOV_LIKELY(st->level == kCrc32cAvx512))
    crc32c_copy_update_avx512(st, dst, src, len);
  else if (IOV_LIKELY(st->level == kCrc32cAvx2Wide))
    crc32c_copy_update_vclmul(st, dst, src, len);
  else
    crc32c_copy_update_other(st, dst, src, len);
}
}  // namespace internal

// The same as a value, for C++ callers:
//
//   iov::crc32c_stream s(~0u);
//   for (auto piece : pieces) s.update(piece.data(), piece.size());
//   uint32_t standard = ~s.value();
class crc32c_stream {
 public:
  explicit crc32c_stream(uint32_t crc) { crc32c_init(&state_, crc); }
  crc32c_stream& update(const void* data, size_t len) {
    crc32c_update(&state_, data, len);
    return *this;
  }
  crc32c_stream& update_zeroes(size_t n) {
    crc32c_update_zeroes(&state_, n);
    return *this;
  }
  uint32_t value() const { return crc32c_final(&state_); }
  crc32c_state* state() { return &state_; }

 private:
  crc32c_state state_;
};

namespace internal {
// The steps, written once over the accumulator A that each piece feeds,
// passed as priv2: the walk's crc32c_state in memory, or the avx512 window in
// registers (crc32c_registers_walk below). A has, found by argument-dependent
// lookup, crc32c_update(A*, src, len) and crc32c_copy_update(A*, dst, src, len).
//   crc32c_step:           priv unused
//   crc32c_copy_to_*:      priv = const char* from (the source)
//   crc32c_copy_from_*:    priv = char* to (the destination)
// The user-backed copy steps go through usercopy_allow(), as copy.hpp's do, so
// an injected fault makes the copy (and the CRC) stop short.
template <class A>
inline size_t crc32c_step(void* iter_base, size_t, size_t len, void*, void* acc) {
  crc32c_update(static_cast<A*>(acc), iter_base, len);
  return 0;
}
template <class A>
inline size_t crc32c_copy_to_iter_step(void* iter_to, size_t progress, size_t len, void* from, void* acc) {
  crc32c_copy_update(static_cast<A*>(acc), iter_to, static_cast<const char*>(from) + progress, len);
  return 0;
}
template <class A>
inline size_t crc32c_copy_to_user_iter_step(void* iter_to, size_t progress, size_t len, void* from, void* acc) {
  size_t n = usercopy_allow(len);
  crc32c_copy_to_iter_step<A>(iter_to, progress, n, from, acc);
  return len - n;
}
template <class A>
inline size_t crc32c_copy_from_iter_step(void* iter_from, size_t progress, size_t len, void* to, void* acc) {
  crc32c_copy_update(static_cast<A*>(acc), static_cast<char*>(to) + progress, iter_from, len);
  return 0;
}
template <class A>
inline size_t crc32c_copy_from_user_iter_step(void* iter_from, size_t progress, size_t len, void* to, void* acc) {
  size_t n = usercopy_allow(len);
  crc32c_copy_from_iter_step<A>(iter_from, progress, n, to, acc);
  return len - n;
}

template <class A>
struct crc32c_steps : steps<crc32c_step<A>, crc32c_step<A>> {};
template <class A>
struct crc32c_copy_to_iter_steps : steps<crc32c_copy_to_user_iter_step<A>, crc32c_copy_to_iter_step<A>> {};
template <class A>
struct crc32c_copy_from_iter_steps : steps<crc32c_copy_from_user_iter_step<A>, crc32c_copy_from_iter_step<A>> {};

// The walks the register form is compiled for (src/crc32c_fold_x86.cc).
template <class W>
inline constexpr bool crc32c_registers_compiled =
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    std::is_same_v<W, inline_walk> || std::is_same_v<W, ubuf_first_walk> || std::is_same_v<W, outofline_walk>;
#else
    false;  // no state is ever at the avx512 level
#endif

// W over Steps (a pair above, on the state), run with the window of the
// state st (at the avx512 level) in four registers from piece to piece: one
// call, compiled in src/crc32c_fold_x86.cc for the walks above.
template <class W, class Steps>
size_t crc32c_run_in_registers(iov_iter* i, size_t len, void* priv, crc32c_state* st);

// The walk the CRC's public functions choose: W, with the accumulator in
// registers where the state is at the avx512 level and that form of W is
// compiled; otherwise W itself, on the state in memory. For the CRC's steps
// only (priv2 is the crc32c_state). A crc32c_update() per piece loads and
// stores the window: a walk of 512-byte sectors pays about a tenth of its
// time for that.
template <Walk W>
struct crc32c_registers_walk {
  template <class Steps>
  IOV_ALWAYS_INLINE static size_t run(iov_iter* i, size_t len, void* priv, void* priv2) {
    if constexpr (crc32c_registers_compiled<W>) {
      auto* st = static_cast<crc32c_state*>(priv2);
      if (st->level == kCrc32cAvx512) return crc32c_run_in_registers<W, Steps>(i, len, priv, st);
    }
    return W::template run<Steps>(i, len, priv, priv2);
  }
};

// Each body runs W over one state on its stack, reduced once at the end.
template <Walk W>
inline size_t crc32c_iter(iov_iter* i, size_t bytes, uint32_t* crc) {
  if (IOV_UNLIKELY(iov_iter_is_discard(i)))
    return 0;
  crc32c_state st;
  crc32c_init(&st, *crc);
  size_t n = W::template run<crc32c_steps<crc32c_state>>(i, bytes, nullptr, &st);
  *crc = crc32c_final(&st);
  return n;
}

template <Walk W>
inline size_t crc32c_and_copy_to_iter(const void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  crc32c_state st;
  crc32c_init(&st, *crc);
  size_t n = W::template run<crc32c_copy_to_iter_steps<crc32c_state>>(i, bytes, const_cast<void*>(addr), &st);
  if (IOV_UNLIKELY(iov_iter_is_discard(i)))
    crc32c_update(&st, addr, n);
  *crc = crc32c_final(&st);
  return n;
}

template <Walk W>
inline size_t crc32c_and_copy_from_iter(void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  if (IOV_UNLIKELY(!i->data_source))
    return 0;
  crc32c_state st;
  crc32c_init(&st, *crc);
  size_t n = W::template run<crc32c_copy_from_iter_steps<crc32c_state>>(i, bytes, addr, &st);
  *crc = crc32c_final(&st);
  return n;
}
}  // namespace internal

// *crc = crc32c(*crc, the next bytes of the iterator); advances past them and
// returns how many. Reads the memory whatever the direction (the CRC of what a
// read just filled in). A discard iterator has no memory: nothing is processed.
inline size_t crc32c_iter(iov_iter* i, size_t bytes, uint32_t* crc) {
  return internal::crc32c_iter<internal::crc32c_registers_walk<internal::inline_walk>>(i, bytes, crc);
}

// copy_to_iter() that also extends *crc over the bytes copied, reading each
// once. On an ITER_SOURCE iterator: 0, *crc unchanged. A discard iterator
// consumes without copying; *crc then covers the source bytes consumed.
inline size_t crc32c_and_copy_to_iter(const void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  return internal::crc32c_and_copy_to_iter<internal::crc32c_registers_walk<internal::inline_walk>>(addr, bytes, crc, i);
}

// copy_from_iter() that also extends *crc over the bytes copied, reading each
// once. On an ITER_DEST iterator (discard included): 0, *crc unchanged.
inline size_t crc32c_and_copy_from_iter(void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  return internal::crc32c_and_copy_from_iter<internal::crc32c_registers_walk<internal::inline_walk>>(addr, bytes, crc, i);
}

}  // namespace iov
