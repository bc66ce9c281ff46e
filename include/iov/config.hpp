// config.hpp: the language check, compiler attributes and the library's
// programming-error checks.
//
// Where the kernel has BUG()/VM_BUG_ON (revert past the start, a page helper's
// off + len > PAGE_SIZE) iov does nothing and returns a zero count; with
// IOV_CHECKS on it aborts with a message naming the broken rule instead:
//
//   if (IOV_BUG_ON(off + len > PAGE_SIZE, "memcpy_to_page: off + len > PAGE_SIZE"))
//     return;   // checks off: a no-op
//
// The mode is the one iov was built with (iov/checks_mode.hpp, written when
// iov was configured: IOV_CHECKS_MODE, or on for a Debug build and off
// otherwise), whatever the including program's NDEBUG: inline functions and
// the compiled library must agree, so defining IOV_CHECKS to anything else is
// a build error.
#pragma once

#if !defined(__cplusplus) || __cplusplus < 202002L
// One clear message, then stop: the rest of iov would only add noise.
#error "iov needs C++20: compile with -std=c++20 (CMake: target_compile_features(... cxx_std_20))"
#include "iov: C++20 is required (-std=c++20)"
#endif

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "iov/checks_mode.hpp"

#if defined(IOV_CHECKS) && IOV_CHECKS != IOV_CHECKS_BUILT
#error "iov: IOV_CHECKS differs from the mode this iov was built with (IOV_CHECKS_BUILT in iov/checks_mode.hpp)"
#endif
#ifndef IOV_CHECKS
#define IOV_CHECKS IOV_CHECKS_BUILT
#endif

#define IOV_ALWAYS_INLINE inline __attribute__((always_inline))
#define IOV_NOINLINE __attribute__((noinline))
#define IOV_LIKELY(x) __builtin_expect(!!(x), 1)
#define IOV_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace iov::internal {
// Prints "iov: BUG: <what> (file:line)" and aborts. Out of line and cold:
// never on a hot path, and inline so that the headers need no library.
[[noreturn]] IOV_NOINLINE __attribute__((cold)) inline void bug(const char* what, const char* file,
                                                                int line) noexcept {
  std::fprintf(stderr, "iov: BUG: %s (%s:%d)\n", what, file, line);
  std::abort();
}
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
