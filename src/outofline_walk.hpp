// outofline_walk.hpp: the definition of outofline_walk::run (internal/walk.hpp),
// for the src/ files that instantiate it, one per operation header:
//
//   #include "outofline_walk.hpp"
//   template size_t outofline_walk::run<copy_to_iter_steps>(iov_iter*, size_t, void*, void*);
//
// The instance is the inline walk with the steps inlined, compiled here; the
// library is built without link-time optimization, so no caller inlines it.
#pragma once

#include <cstddef>

#include "iov/internal/walk.hpp"

namespace iov::internal {

template <class Steps>
size_t outofline_walk::run(iov_iter* i, size_t len, void* priv, void* priv2) {
  return inline_walk::run<Steps>(i, len, priv, priv2);
}

}  // namespace iov::internal
