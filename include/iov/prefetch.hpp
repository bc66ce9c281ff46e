// prefetch.hpp: the kernel's include/linux/prefetch.h: ask for a cache line,
// or the lines of a range, ahead of its use, without waiting for it.
//
//   iov::prefetch(p);                      // a read of *p will follow
//   iov::prefetchw(p);                     // a write to *p will follow
//   iov::prefetch_range(head, 1024);       // prefetch() every PREFETCH_STRIDE bytes
//
// A prefetch is a hint: it never faults, not even on an unmapped address,
// and changes no memory. prefetch_range() asks for addr, addr +
// PREFETCH_STRIDE, ... below addr + len, and for nothing when len is 0; an
// unaligned range's last line is asked for only if a stride lands in it, as
// in the kernel. The kernel's signature takes a void*; this one takes a
// const void*, as its x86 prefetch() does, so that read-only data needs no
// cast.
#pragma once

#include <cstddef>

#include "iov/config.hpp"

namespace iov {

// The kernel's value on x86-64: a cache line of every x86-64 CPU.
inline constexpr size_t L1_CACHE_BYTES = 64;

// The kernel's generic stride is 4 * L1_CACHE_BYTES, leaving three lines of
// four to the hardware prefetcher; here every line is asked for, as the
// callers' own loops did (brd's and the memcpy limit's 1 KiB head of a page,
// an NBD reply's pages or their heads). The kernel's stride, tried on brd's batched reads
// and the limit's, changed neither beyond the spread (docs/brd-limit.md).
inline constexpr size_t PREFETCH_STRIDE = L1_CACHE_BYTES;

// In asm, as the kernel's x86 prefetch(): GCC 12 takes a function whose only
// statement is __builtin_prefetch for one without side effects and drops the
// calls of a loop of them (prefetch_range's, in some callers) altogether.
IOV_ALWAYS_INLINE void prefetch(const void* x) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(x)));
#else
  __builtin_prefetch(x, 0);
  asm volatile("" : : "r"(x));  // a side effect, so that the prefetch stays
#endif
}

// For writing: the line is asked for in the exclusive state, so that the
// store that follows needs no second request. That takes PREFETCHW, which
// the x86-64 baseline lacks: a build for it (iov's default flags) emits the
// same PREFETCHT0 as prefetch(), a read prefetch; a build with -march for a
// CPU that has PRFCHW (Intel since Broadwell; AMD) emits PREFETCHW.
IOV_ALWAYS_INLINE void prefetchw(const void* x) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#ifdef __PRFCHW__
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(x)));
#else
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(x)));
#endif
#else
  __builtin_prefetch(x, 1);
  asm volatile("" : : "r"(x));
#endif
}

namespace internal {
// Calls f(p) for p = addr, addr + PREFETCH_STRIDE, ... below addr + len: the
// addresses of prefetch_range(). Offsets, not pointers, step past the end.
template <class F>
IOV_ALWAYS_INLINE void for_each_prefetch_stride(const void* addr, size_t len, F&& f) {
  const char* p = static_cast<const char*>(addr);
  for (size_t off = 0; off < len; off += PREFETCH_STRIDE) f(p + off);
}
}  // namespace internal

IOV_ALWAYS_INLINE void prefetch_range(const void* addr, size_t len) {
  internal::for_each_prefetch_stride(addr, len, [](const char* p) { prefetch(p); });
}

// prefetch_range() for a range about to be written. Not in the kernel.
IOV_ALWAYS_INLINE void prefetchw_range(const void* addr, size_t len) {
  internal::for_each_prefetch_stride(addr, len, [](const char* p) { prefetchw(p); });
}

}  // namespace iov
