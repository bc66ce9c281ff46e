// generic_iterate.cc: the out-of-line walk, compiled once and called through
// function pointers (the kernel's experiment of un-inlining iterate_and_advance).
// It lives in its own translation unit, built without LTO, so that no caller
// can inline it and every step is an indirect call.
#include "iov/iterate.hpp"

namespace iov {

size_t generic_iterate(iov_iter* iter, size_t len, void* priv, void* priv2, iov_ustep_f ustep, iov_step_f step) {
  return iterate_and_advance2(iter, len, priv, priv2, ustep, step);
}

}  // namespace iov
