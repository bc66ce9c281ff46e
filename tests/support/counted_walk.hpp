// counted_walk.hpp: the sample walk of internal/walk.hpp's Walk concept, a
// caller's own policy that counts its calls and then walks inline; no
// out-of-line or register form of any operation is compiled for it.
//
//   size_t before = iov_test::counted_walk::calls;
//   iov::internal::copy_from_iter<iov_test::counted_walk>(dst, len, &it);
//   EXPECT_GT(iov_test::counted_walk::calls, before);
#pragma once

#include <cstddef>

#include "iov/internal/walk.hpp"
#include "iov/iov_iter.hpp"

namespace iov_test {

struct counted_walk {
  static inline size_t calls = 0;
  template <class Steps>
  static size_t run(iov::iov_iter* i, size_t len, void* priv, void* priv2) {
    calls++;
    return iov::internal::inline_walk::run<Steps>(i, len, priv, priv2);
  }
};
static_assert(iov::internal::Walk<counted_walk>);

}  // namespace iov_test
