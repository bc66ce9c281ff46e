// walk.hpp: how each operation is written once and run inline or out of line.
//
// An operation (copy.hpp, crc32c.hpp, zero_scan.hpp, ...) names its pair of
// steps and writes its body once, as a template over the walk that drives
// them:
//
//   using copy_to_iter_steps = steps<copy_to_user_iter, memcpy_to_iter>;
//   template <class Walk>
//   size_t copy_to_iter(const void* addr, size_t bytes, iov_iter* i) {
//     if (i->data_source) return 0;
//     return Walk::template run<copy_to_iter_steps>(i, bytes, const_cast<void*>(addr), nullptr);
//   }
//
// The public function passes the inline walk it wants; internal/outofline.hpp
// passes generic_walk. The walks:
//   inline_walk      iterate_and_advance2() with the steps inlined
//   ubuf_first_walk  UBUF inlined at the call site and the other types in
//                    one out-of-line instance per pair of steps, so that the
//                    common single-buffer case is a bare memcpy (the kernel
//                    splits copy_to_iter() from _copy_to_iter() for this)
//   generic_walk     generic_iterate(), the walk compiled once in src/ and
//                    called through function pointers
// A pair of steps used through generic_walk registers itself with
// generic_iterate() at start-up, with its own inlined walk; generic_iterate()
// runs that walk when it is handed the pair, comparing pointers once per call
// rather than calling through them once per piece (the kernel's
// INDIRECT_CALL_*() idea: an indirect call per piece costs a mispredicted
// return under retpolines). Steps it does not know still go through their
// pointers.
#pragma once

#include <cstddef>

#include "iov/config.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"

namespace iov::internal {

// A step function as an inlinable callable.
template <auto F>
struct step_call {
  IOV_ALWAYS_INLINE size_t operator()(void* base, size_t progress, size_t len, void* priv, void* priv2) const {
    return F(base, progress, len, priv, priv2);
  }
};

struct inline_walk {
  template <class Steps>
  IOV_ALWAYS_INLINE static size_t run(iov_iter* i, size_t len, void* priv, void* priv2) {
    return iterate_and_advance2(i, len, priv, priv2, step_call<Steps::ustep>{}, step_call<Steps::step>{});
  }
};

struct ubuf_first_walk {
  template <class Steps>
  IOV_ALWAYS_INLINE static size_t run(iov_iter* i, size_t len, void* priv, void* priv2) {
    if (IOV_LIKELY(iter_is_ubuf(i)))
      return iterate_ubuf(i, len, priv, priv2, step_call<Steps::ustep>{});
    return rest<Steps>(i, len, priv, priv2);
  }
  template <class Steps>
  IOV_NOINLINE static size_t rest(iov_iter* i, size_t len, void* priv, void* priv2) {
    return inline_walk::run<Steps>(i, len, priv, priv2);
  }
};

// A pair of steps: ustep for the user-backed types, step for the rest (the
// contract of iterate_and_advance2()). walk() is the pair's inlined walk, the
// one generic_iterate() runs once the pair is registered.
template <iov_ustep_f UStep, iov_step_f Step>
struct steps {
  static constexpr iov_ustep_f ustep = UStep;
  static constexpr iov_step_f step = Step;
  static size_t walk(iov_iter* i, size_t len, void* priv, void* priv2) {
    return inline_walk::run<steps>(i, len, priv, priv2);
  }
};

// generic_iterate()'s table of known pairs (src/generic_iterate.cc). Adding
// a pair already there changes nothing; false when the table is full (the
// pair then keeps going through its pointers).
using known_walk_f = size_t (*)(iov_iter* i, size_t len, void* priv, void* priv2);
bool generic_iterate_register(iov_ustep_f ustep, iov_step_f step, known_walk_f walk) noexcept;
// Whether generic_iterate() runs this pair as an inlined walk.
bool generic_iterate_knows(iov_ustep_f ustep, iov_step_f step) noexcept;

template <class Steps>
struct registration {
  // Initialized at start-up in every program that instantiates it.
  static inline const bool registered = generic_iterate_register(Steps::ustep, Steps::step, &Steps::walk);
};

struct generic_walk {
  template <class Steps>
  static size_t run(iov_iter* i, size_t len, void* priv, void* priv2) {
    static_cast<void>(&registration<Steps>::registered);  // instantiates the registration
    return generic_iterate(i, len, priv, priv2, Steps::ustep, Steps::step);
  }
};

}  // namespace iov::internal
