// zero_scan.hpp: finding the first byte that differs from a value, and zero
// detection over flat memory and over an iterator (the kernel's memchr_inv()
// and mem_is_zero(), and the iterator scans a zero-detecting block driver
// needs: is this write all zeroes, where does its data start).
//
//   if (iov::iov_iter_is_zero(&it, len))            // does not advance
//     return discard_write(len);
//   size_t hole = iov::iov_iter_skip_zeroes(&it, len);  // advances to the data
//
// The flat scans run one of three kernels (portable, AVX2, AVX-512; see
// internal/zero_scan_simd.hpp) chosen once at run time; each handles its
// ragged ends with overlapping or masked full-width loads, so the iterator
// scans, which call it once per piece, keep the wide loads on short and
// unaligned pieces too. They read the memory whatever the iterator's
// direction (a read just filled it). A DISCARD iterator has no memory: for
// bytes > 0 nothing is processed and iov_iter_is_zero() is false.
#pragma once

#ifdef IOV_HEADER_ONLY
#error "iov/zero_scan.hpp needs the compiled library (run-time SIMD dispatch): link iov::iov (pkg-config iov), not iov::headers (iov-headers)"
#include "iov: link iov::iov"
#endif

#include <cstddef>
#include <cstring>

#include "iov/config.hpp"
#include "iov/internal/walk.hpp"
#include "iov/internal/zero_scan_simd.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"

namespace iov {

// The first byte of [p, p + len) that is not (unsigned char)c, or nullptr.
inline void* memchr_inv(const void* p, int c, size_t len) {
  return const_cast<void*>(internal::memchr_inv_impl.load(std::memory_order_relaxed)(p, c, len));
}

// True when every byte of [p, p + len) is zero (and for len == 0).
inline bool mem_is_zero(const void* p, size_t len) {
  return internal::mem_is_zero_impl.load(std::memory_order_relaxed)(p, len);
}

namespace internal {
// The steps; neither uses priv.
// is_zero: all of a zero piece is processed, none of a non-zero one (the walk
// stops there). skip_zeroes: the piece's zero prefix is processed and the rest
// returned, so the walk stops exactly at the first non-zero byte.
inline size_t is_zero_step(void* iter_base, size_t, size_t len, void*, void*) {
  return mem_is_zero(iter_base, len) ? 0 : len;
}
inline size_t skip_zeroes_step(void* iter_base, size_t, size_t len, void*, void*) {
  const void* nz = memchr_inv(iter_base, 0, len);
  return nz ? len - static_cast<size_t>(static_cast<const char*>(nz) - static_cast<const char*>(iter_base)) : 0;
}

// *i copied field by field, each at its own width. A caller has often just
// built *i with narrow stores (an initializer sets the flags byte by byte);
// a struct copy's 16-byte loads over them would miss store forwarding and
// stall until the stores retire, which also stops the CPU from running ahead
// into the next scan (measured: 25 cycles a call in L1, the DRAM latency of a
// page when streaming).
IOV_ALWAYS_INLINE void copy_iter_fields(iov_iter* to, const iov_iter* i) {
  to->type = i->type;
  to->data_source = i->data_source;
  to->iov_offset = i->iov_offset;
  std::memcpy(&to->ubuf, &i->ubuf, sizeof to->ubuf);  // whichever pointer is live
  to->count = i->count;
  std::memcpy(&to->nr_segs, &i->nr_segs, sizeof to->nr_segs);  // or xarray_start
}

using is_zero_steps = steps<is_zero_step, is_zero_step>;
using skip_zeroes_steps = steps<skip_zeroes_step, skip_zeroes_step>;

template <Walk W>
inline bool iov_iter_is_zero(const iov_iter* i, size_t bytes) {
  if (bytes == 0)
    return true;
  if (bytes > i->count || iov_iter_is_discard(i))
    return false;
  iov_iter scan;
  copy_iter_fields(&scan, i);
  return W::template run<is_zero_steps>(&scan, bytes, nullptr, nullptr) == bytes;
}

template <Walk W>
inline size_t iov_iter_skip_zeroes(iov_iter* i, size_t bytes) {
  if (IOV_UNLIKELY(iov_iter_is_discard(i)))
    return 0;
  return W::template run<skip_zeroes_steps>(i, bytes, nullptr, nullptr);
}
}  // namespace internal

// True when the next `bytes` bytes of the iterator are all zero; false when
// fewer remain (or for a DISCARD iterator); true for bytes == 0. Walks a copy:
// the iterator does not move.
inline bool iov_iter_is_zero(const iov_iter* i, size_t bytes) {
  return internal::iov_iter_is_zero<internal::inline_walk>(i, bytes);
}

// Advances over the zero bytes at the front of the next `bytes` (clamped to
// the count) and returns how many; the iterator then stands on the first
// non-zero byte, or past `bytes`. A DISCARD iterator processes nothing.
inline size_t iov_iter_skip_zeroes(iov_iter* i, size_t bytes) {
  return internal::iov_iter_skip_zeroes<internal::inline_walk>(i, bytes);
}

}  // namespace iov
