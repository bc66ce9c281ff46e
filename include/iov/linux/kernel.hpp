// linux/kernel.hpp: the kernel's generic vocabulary that ported code uses
// (types.h, compiler.h, minmax.h, math.h, align.h, slab.h, printk.h,
// bug.h), for code written in the kernel's C style. Opt-in: iov.hpp never
// includes it, as its macros (likely, min_t, ALIGN, pr_info, BUG_ON, ...)
// are global names.
//
//   #include <iov/linux/kernel.hpp>
//   iov::u8* buf = static_cast<iov::u8*>(iov::kmalloc_array(n, 64, iov::GFP_KERNEL));
//   if (unlikely(!buf)) return -ENOMEM;
//   pr_info("%zu blocks\n", DIV_ROUND_UP(len, 512));
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "iov/config.hpp"
#include "iov/page.hpp"

namespace iov {

using u8 = uint8_t;
using u16 = uint16_t;
using u32 = uint32_t;
using u64 = uint64_t;
using s8 = int8_t;
using s16 = int16_t;
using s32 = int32_t;
using s64 = int64_t;

// minmax.h: min and max of two values of one kind (the common type, where
// the kernel's would refuse a signed/unsigned mix at compile time).
template <class A, class B>
constexpr std::common_type_t<A, B> min(A a, B b) {
  return a < b ? a : b;
}
template <class A, class B>
constexpr std::common_type_t<A, B> max(A a, B b) {
  return a > b ? a : b;
}
// umin/umax: compared as unsigned (the kernel's for unsigned operands).
template <class A, class B>
constexpr auto umin(A a, B b) {
  using U = std::make_unsigned_t<std::common_type_t<A, B>>;
  return static_cast<U>(a) < static_cast<U>(b) ? static_cast<U>(a) : static_cast<U>(b);
}
template <class A, class B>
constexpr auto umax(A a, B b) {
  using U = std::make_unsigned_t<std::common_type_t<A, B>>;
  return static_cast<U>(a) > static_cast<U>(b) ? static_cast<U>(a) : static_cast<U>(b);
}
template <class T, class L, class H>
constexpr std::common_type_t<T, L, H> clamp(T val, L lo, H hi) {
  return val < lo ? lo : (val > hi ? hi : val);
}

// slab.h: malloc underneath; kfree and kvfree take nullptr.
inline void* kmalloc(size_t size, gfp_t gfp) {
  void* p = std::malloc(size ? size : 1);
  if (p && (gfp & __GFP_ZERO))
    std::memset(p, 0, size);
  return p;
}
inline void* kzalloc(size_t size, gfp_t gfp) { return kmalloc(size, gfp | __GFP_ZERO); }
// nullptr when n * size overflows, as the kernel's.
inline void* kmalloc_array(size_t n, size_t size, gfp_t gfp) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes))
    return nullptr;
  return kmalloc(bytes, gfp);
}
inline void* kcalloc(size_t n, size_t size, gfp_t gfp) { return kmalloc_array(n, size, gfp | __GFP_ZERO); }
inline void* kvmalloc(size_t size, gfp_t gfp) { return kmalloc(size, gfp); }
inline void kfree(const void* p) { std::free(const_cast<void*>(p)); }
inline void kvfree(const void* p) { std::free(const_cast<void*>(p)); }

}  // namespace iov

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define min_t(type, x, y) ((type)(x) < (type)(y) ? (type)(x) : (type)(y))
#define max_t(type, x, y) ((type)(x) > (type)(y) ? (type)(x) : (type)(y))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
// round_up/round_down/ALIGN: y a power of two, as the kernel's.
#define round_up(x, y) ((((x) - 1) | ((__typeof__(x))((y) - 1))) + 1)
#define round_down(x, y) ((x) & ~((__typeof__(x))((y) - 1)))
#define ALIGN(x, a) (((x) + ((__typeof__(x))(a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ARRAY_SIZE(arr) (sizeof(arr) / sizeof((arr)[0]))

// printk.h: to stderr, with the level's name.
#define pr_err(fmt, ...) std::fprintf(stderr, "err: " fmt __VA_OPT__(,) __VA_ARGS__)
#define pr_warn(fmt, ...) std::fprintf(stderr, "warn: " fmt __VA_OPT__(,) __VA_ARGS__)
#define pr_notice(fmt, ...) std::fprintf(stderr, "notice: " fmt __VA_OPT__(,) __VA_ARGS__)
#define pr_info(fmt, ...) std::fprintf(stderr, "info: " fmt __VA_OPT__(,) __VA_ARGS__)
// pr_debug prints nothing (the kernel's without DEBUG), its arguments still checked.
#define pr_debug(fmt, ...) ((void)sizeof(std::fprintf(stderr, fmt __VA_OPT__(,) __VA_ARGS__)))

// bug.h: WARN_ON yields its condition (and prints where); BUG_ON aborts with
// IOV_CHECKS on, and is the condition otherwise (iov's rule for a bug).
#define WARN_ON(cond)                                                                          \
  ({                                                                                           \
    bool __warn = !!(cond);                                                                    \
    if (__builtin_expect(__warn, 0))                                                           \
      std::fprintf(stderr, "WARNING: %s at %s:%d\n", #cond, __FILE__, __LINE__);               \
    __warn;                                                                                    \
  })
#define WARN_ON_ONCE(cond)                                                                     \
  ({                                                                                           \
    static bool __warned;                                                                      \
    bool __warn = !!(cond);                                                                    \
    if (__builtin_expect(__warn, 0) && !__warned) {                                            \
      __warned = true;                                                                         \
      std::fprintf(stderr, "WARNING: %s at %s:%d\n", #cond, __FILE__, __LINE__);               \
    }                                                                                          \
    __warn;                                                                                    \
  })
#define BUG_ON(cond) ((void)IOV_BUG_ON((cond), "BUG_ON(" #cond ")"))
