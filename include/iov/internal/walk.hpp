// walk.hpp: how each operation is written once and run over any walk.
//
// An operation (copy.hpp, crc32c.hpp, zero_scan.hpp, ...) names its pair of
// steps and writes its body once, as a template over the walk that drives
// them; the public function passes the walk it wants:
//
//   using copy_to_iter_steps = steps<copy_to_user_iter, memcpy_to_iter>;
//   template <Walk W>
//   size_t copy_to_iter(const void* addr, size_t bytes, iov_iter* i) {
//     if (i->data_source) return 0;
//     return W::template run<copy_to_iter_steps>(i, bytes, const_cast<void*>(addr), nullptr);
//   }
//
// A walk is a policy (the Walk concept below); the library's:
//   inline_walk      iterate_and_advance2() with the steps inlined at the call
//   ubuf_first_walk  UBUF inlined at the call site, the other types in one
//                    out-of-line instance per pair of steps, so that the
//                    common single-buffer case is a bare memcpy (the kernel
//                    splits copy_to_iter() from _copy_to_iter() for this)
//   outofline_walk   the inline walk compiled once: one explicit
//                    instantiation per pair of steps, in the src/ file named
//                    after the operation's header (src/copy.cc for copy.hpp),
//                    reached by a direct call
//   pointer_walk     generic_iterate(): the walk compiled once for every pair,
//                    calling the steps through their pointers once per piece
//                    (the kernel's experiment of un-inlining iterate_and_advance)
// The out-of-line forms of every operation are in internal/outofline.hpp.
#pragma once

#include <concepts>
#include <cstddef>

#include "iov/config.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"

namespace iov::internal {

// A pair of steps: ustep for the user-backed types, step for the rest (the
// contract of iterate_and_advance2()).
template <iov_ustep_f UStep, iov_step_f Step>
struct steps {
  static constexpr iov_ustep_f ustep = UStep;
  static constexpr iov_step_f step = Step;
};

// A walk W drives a pair of steps over the next `len` bytes of an iterator,
// with iterate_and_advance2()'s contract: the iterator advances past the bytes
// processed, and W::run returns how many. priv and priv2 go to every step.
// A sample, a walk that counts its calls and then walks inline:
//
//   struct counted_walk {
//     static inline size_t calls = 0;
//     template <class Steps>
//     static size_t run(iov_iter* i, size_t len, void* priv, void* priv2) {
//       calls++;
//       return inline_walk::run<Steps>(i, len, priv, priv2);
//     }
//   };
//   static_assert(Walk<counted_walk>);
//   size_t n = iov::internal::copy_from_iter<counted_walk>(dst, len, &it);
//
// The check runs W::run on a sample pair, walk_probe_steps (never called).
size_t walk_probe_step(void* iter_base, size_t progress, size_t len, void* priv, void* priv2);
using walk_probe_steps = steps<walk_probe_step, walk_probe_step>;

template <class W>
concept Walk = requires(iov_iter* i, size_t len, void* priv, void* priv2) {
  { W::template run<walk_probe_steps>(i, len, priv, priv2) } -> std::same_as<size_t>;
};

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

// run<Steps> is declared here and defined only where it is instantiated
// (IOV_OUTOFLINE_WALK in src/outofline_walk.hpp), so a caller can neither
// inline it nor instantiate its own copy: a pair nobody instantiated fails
// to link.
struct outofline_walk {
  template <class Steps>
  static size_t run(iov_iter* i, size_t len, void* priv, void* priv2);
};

struct pointer_walk {
  template <class Steps>
  static size_t run(iov_iter* i, size_t len, void* priv, void* priv2) {
    return generic_iterate(i, len, priv, priv2, Steps::ustep, Steps::step);
  }
};

static_assert(Walk<inline_walk> && Walk<ubuf_first_walk> && Walk<outofline_walk> && Walk<pointer_walk>);

}  // namespace iov::internal
