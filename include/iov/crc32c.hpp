// crc32c.hpp: CRC-32C (Castagnoli, the iSCSI/ext4/btrfs CRC) over memory,
// over runs of zero bytes that are never read, over an iterator, and fused
// with copy_to_iter/copy_from_iter so that each byte is read from memory once.
//
//   uint32_t crc = ~0u;
//   size_t n = iov::crc32c_and_copy_from_iter(buf, len, &crc, &it);  // copy, and CRC what was copied
//   crc = iov::crc32c_extend_zeroes(crc, hole_len);                   // a hole, never touched
//   uint32_t standard = ~crc;                                         // the iSCSI value
//
// Kernel semantics: crc32c(crc, p, len) is the raw reflected update, with no
// inversion before or after; the standard CRC-32C of a buffer is
// ~crc32c(~0u, p, len). ISA-L's crc32_iscsi() is the engine (it dispatches up
// to AVX-512 VPCLMULQDQ) and has the same convention. The fused forms use
// their own one-pass copy+fold kernel (src/crc32c.cc). Each iterator form is
// one body over a walk (internal/walk.hpp).
#pragma once

#include <isa-l/crc.h>

#include <cstddef>
#include <cstdint>

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

namespace internal {
// The steps. priv/priv2:
//   crc32c_step:           priv = uint32_t* crc
//   crc32c_copy_to_*:      priv = const char* from (the source), priv2 = uint32_t* crc
//   crc32c_copy_from_*:    priv = char* to (the destination),   priv2 = uint32_t* crc
// The user-backed copy steps go through usercopy_allow(), as copy.hpp's do, so
// an injected fault makes the copy (and the CRC) stop short.
inline size_t crc32c_step(void* iter_base, size_t, size_t len, void* priv, void*) {
  auto* crc = static_cast<uint32_t*>(priv);
  *crc = crc32c(*crc, iter_base, len);
  return 0;
}
inline size_t crc32c_copy_to_iter_step(void* iter_to, size_t progress, size_t len, void* from, void* priv2) {
  auto* crc = static_cast<uint32_t*>(priv2);
  *crc = crc32c_copy(iter_to, static_cast<const char*>(from) + progress, len, *crc);
  return 0;
}
inline size_t crc32c_copy_to_user_iter_step(void* iter_to, size_t progress, size_t len, void* from,
                                            void* priv2) {
  size_t n = usercopy_allow(len);
  crc32c_copy_to_iter_step(iter_to, progress, n, from, priv2);
  return len - n;
}
inline size_t crc32c_copy_from_iter_step(void* iter_from, size_t progress, size_t len, void* to, void* priv2) {
  auto* crc = static_cast<uint32_t*>(priv2);
  *crc = crc32c_copy(static_cast<char*>(to) + progress, iter_from, len, *crc);
  return 0;
}
inline size_t crc32c_copy_from_user_iter_step(void* iter_from, size_t progress, size_t len, void* to,
                                              void* priv2) {
  size_t n = usercopy_allow(len);
  crc32c_copy_from_iter_step(iter_from, progress, n, to, priv2);
  return len - n;
}

using crc32c_steps = steps<crc32c_step, crc32c_step>;
using crc32c_copy_to_iter_steps = steps<crc32c_copy_to_user_iter_step, crc32c_copy_to_iter_step>;
using crc32c_copy_from_iter_steps = steps<crc32c_copy_from_user_iter_step, crc32c_copy_from_iter_step>;

// The local c: a CRC whose address stays inside an inlined walk lives in a register.
template <class Walk>
inline size_t crc32c_iter(iov_iter* i, size_t bytes, uint32_t* crc) {
  if (IOV_UNLIKELY(iov_iter_is_discard(i)))
    return 0;
  uint32_t c = *crc;
  size_t n = Walk::template run<crc32c_steps>(i, bytes, &c, nullptr);
  *crc = c;
  return n;
}

template <class Walk>
inline size_t crc32c_and_copy_to_iter(const void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  uint32_t c = *crc;
  size_t n = Walk::template run<crc32c_copy_to_iter_steps>(i, bytes, const_cast<void*>(addr), &c);
  *crc = IOV_UNLIKELY(iov_iter_is_discard(i)) ? crc32c(c, addr, n) : c;
  return n;
}

template <class Walk>
inline size_t crc32c_and_copy_from_iter(void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  if (IOV_UNLIKELY(!i->data_source))
    return 0;
  uint32_t c = *crc;
  size_t n = Walk::template run<crc32c_copy_from_iter_steps>(i, bytes, addr, &c);
  *crc = c;
  return n;
}
}  // namespace internal

// *crc = crc32c(*crc, the next bytes of the iterator); advances past them and
// returns how many. Reads the memory whatever the direction (the CRC of what a
// read just filled in). A discard iterator has no memory: nothing is processed.
inline size_t crc32c_iter(iov_iter* i, size_t bytes, uint32_t* crc) {
  return internal::crc32c_iter<internal::inline_walk>(i, bytes, crc);
}

// copy_to_iter() that also extends *crc over the bytes copied, reading each
// once. On an ITER_SOURCE iterator: 0, *crc unchanged. A discard iterator
// consumes without copying; *crc then covers the source bytes consumed.
inline size_t crc32c_and_copy_to_iter(const void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  return internal::crc32c_and_copy_to_iter<internal::inline_walk>(addr, bytes, crc, i);
}

// copy_from_iter() that also extends *crc over the bytes copied, reading each
// once. On an ITER_DEST iterator (discard included): 0, *crc unchanged.
inline size_t crc32c_and_copy_from_iter(void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  return internal::crc32c_and_copy_from_iter<internal::inline_walk>(addr, bytes, crc, i);
}

}  // namespace iov
