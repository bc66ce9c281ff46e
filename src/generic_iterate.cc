// generic_iterate.cc: the pointer walk, compiled once for every pair of steps
// and calling them through their pointers, once per piece (the kernel's
// experiment of un-inlining iterate_and_advance). It lives in its own
// translation unit, built without LTO, so no caller can inline it. Under
// retpolines (-mindirect-branch=thunk) each of those calls pays a thunk; the
// library's operations reach their compiled-once walks by direct calls
// instead (internal/walk.hpp's outofline_walk).
#include "iov/iterate.hpp"

namespace iov {

size_t generic_iterate(iov_iter* iter, size_t len, void* priv, void* priv2, iov_ustep_f ustep, iov_step_f step) {
  return iterate_and_advance2(iter, len, priv, priv2, ustep, step);
}

}  // namespace iov
