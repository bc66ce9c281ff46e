// generic_iterate.cc: the out-of-line walk, compiled once and called through
// function pointers (the kernel's experiment of un-inlining iterate_and_advance).
// It lives in its own translation unit, built without LTO, so no caller can
// inline it.
//
// An indirect call per piece costs little on its own, but under retpolines
// (-mindirect-branch=thunk, as hardened kernels build) each one is a
// mispredicted return. So, as the kernel's INDIRECT_CALL_*() does, the walk
// recognises the library's own steps by address and runs them as direct,
// inlined calls; any other step still goes through its pointer. The compare is
// made once per call, not once per piece.
#include "iov/copy.hpp"
#include "iov/crc32c.hpp"
#include "iov/iterate.hpp"
#include "iov/zero_scan.hpp"

namespace iov {

namespace {
// A known pair of steps, as a walk that calls them directly.
template <iov_ustep_f UStep, iov_step_f Step>
struct known_steps {
  static bool matches(iov_ustep_f ustep, iov_step_f step) { return ustep == UStep && step == Step; }
  static size_t walk(iov_iter* iter, size_t len, void* priv, void* priv2) {
    return iterate_and_advance2(
        iter, len, priv, priv2,
        [](void* base, size_t progress, size_t n, void* p, void* p2) { return UStep(base, progress, n, p, p2); },
        [](void* base, size_t progress, size_t n, void* p, void* p2) { return Step(base, progress, n, p, p2); });
  }
};

template <class... Known>
IOV_ALWAYS_INLINE bool walk_known(iov_iter* iter, size_t len, void* priv, void* priv2, iov_ustep_f ustep,
                                  iov_step_f step, size_t* done) {
  return ((Known::matches(ustep, step) ? (*done = Known::walk(iter, len, priv, priv2), true) : false) || ...);
}
}  // namespace

size_t generic_iterate(iov_iter* iter, size_t len, void* priv, void* priv2, iov_ustep_f ustep, iov_step_f step) {
  size_t done;
  if (walk_known<known_steps<internal::copy_to_user_iter, internal::memcpy_to_iter>,
                 known_steps<internal::copy_from_user_iter, internal::memcpy_from_iter>,
                 known_steps<internal::zero_to_user_iter, internal::zero_to_iter>,
                 known_steps<internal::crc32c_step, internal::crc32c_step>,
                 known_steps<internal::crc32c_copy_to_user_iter_step, internal::crc32c_copy_to_iter_step>,
                 known_steps<internal::crc32c_copy_from_user_iter_step, internal::crc32c_copy_from_iter_step>,
                 known_steps<internal::is_zero_step, internal::is_zero_step>,
                 known_steps<internal::skip_zeroes_step, internal::skip_zeroes_step>>(iter, len, priv, priv2, ustep,
                                                                                       step, &done))
    return done;
  return iterate_and_advance2(iter, len, priv, priv2, ustep, step);
}

}  // namespace iov
