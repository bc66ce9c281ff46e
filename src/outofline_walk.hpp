// outofline_walk.hpp: the definition of outofline_walk::run (internal/walk.hpp),
// for the src/ files that instantiate it, one per operation header:
//
//   #include "outofline_walk.hpp"
//   template size_t outofline_walk::run<copy_to_iter_steps>(iov_iter*, size_t, void*, void*);
//
// The instance is the inline walk with the steps inlined, compiled here; the
// library is built without link-time optimization, so no caller inlines it.
// UBUF is tested first, by a compare, as the kernel's iterate_and_advance2()
// does: iterate_and_advance2()'s switch compiles to a jump table, an indirect
// jump that a hardened build (-mindirect-branch=thunk) turns into a retpoline,
// and a caller making one call per one-page buffer paid it on every page
// (docs/benchmarks.md, "The ubuf gap").
#pragma once

#include <cstddef>

#include "iov/internal/walk.hpp"

namespace iov::internal {

template <class Steps>
size_t outofline_walk::run(iov_iter* i, size_t len, void* priv, void* priv2) {
  if (IOV_LIKELY(iter_is_ubuf(i)))
    return iterate_ubuf(i, len, priv, priv2, step_call<Steps::ustep>{});
  return inline_walk::run<Steps>(i, len, priv, priv2);
}

}  // namespace iov::internal
