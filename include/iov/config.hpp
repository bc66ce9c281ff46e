// config.hpp: compiler attributes and the library's programming-error checks.
//
// Where the kernel has BUG()/VM_BUG_ON (revert past the start, a page helper's
// off + len > PAGE_SIZE) iov does nothing and returns a zero count; with
// IOV_CHECKS on (the default without NDEBUG, and in the debug and sanitizer
// presets) it aborts with a message naming the broken rule instead:
//
//   if (IOV_BUG_ON(off + len > PAGE_SIZE, "memcpy_to_page: off + len > PAGE_SIZE"))
//     return;   // checks off: a no-op
#pragma once

#include <cstddef>

#ifndef IOV_CHECKS
#ifdef NDEBUG
#define IOV_CHECKS 0
#else
#define IOV_CHECKS 1
#endif
#endif

#define IOV_ALWAYS_INLINE inline __attribute__((always_inline))
#define IOV_NOINLINE __attribute__((noinline))
#define IOV_LIKELY(x) __builtin_expect(!!(x), 1)
#define IOV_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace iov::internal {
// Prints "iov: BUG: <what> (file:line)" and aborts. Out of line: never on a hot path.
[[noreturn]] void bug(const char* what, const char* file, int line) noexcept;
}  // namespace iov::internal

// IOV_BUG_ON(cond, what): true when cond holds (and checks are off), so the
// caller can bail out; aborts when cond holds and checks are on.
#if IOV_CHECKS
#define IOV_BUG_ON(cond, what) \
  (IOV_UNLIKELY(cond) ? (::iov::internal::bug((what), __FILE__, __LINE__), true) : false)
#else
#define IOV_BUG_ON(cond, what) ::iov::internal::bug_on_unchecked(cond)
#endif

namespace iov::internal {
// A call, not a bare expression, so IOV_BUG_ON may stand as a statement.
inline bool bug_on_unchecked(bool cond) noexcept { return __builtin_expect(cond, 0); }

// A length with what the compiler knows of its bound forgotten, for the
// memcpy/memset of a piece within a page. Seeing len <= PAGE_SIZE (a walk's
// cut, a page helper's range check), GCC expands some of those calls inline
// as rep movsq/stosq and leaves others to the C library, call site by call
// site: the zero-fill came out ~7% slower per 4 KiB than glibc's memset, and
// the inline, typed and out-of-line forms of one copy walk ran different code
// for the same bytes. Every page piece goes to the C library, the code the
// memcpy/memset baselines measure.
IOV_ALWAYS_INLINE size_t unbounded(size_t len) {
  asm("" : "+r"(len));
  return len;
}
}  // namespace iov::internal
