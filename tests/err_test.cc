// err_test.cc: errors encoded in pointers (err.hpp, the kernel's err.h), as
// ported functions returning a typed pointer use them.
//
//   ctest -R err_test
#include <cerrno>

#include <gtest/gtest.h>

#include "iov/iov.hpp"

namespace {

// A function as kernel C writes one: ERR_PTR() returned as a page*.
iov::page* lookup(int err, iov::page* found) {
  if (err)
    return iov::ERR_PTR(err);
  return found;
}

TEST(Err, EncodesAndDecodesErrnos) {
  iov::page* pg = iov::alloc_page();
  for (int err : {-1, -EINVAL, -ENOMEM, -4095}) {
    iov::page* p = lookup(err, pg);
    EXPECT_TRUE(iov::IS_ERR(p));
    EXPECT_TRUE(iov::IS_ERR_OR_NULL(p));
    EXPECT_EQ(iov::PTR_ERR(p), err);
    EXPECT_EQ(iov::PTR_ERR_OR_ZERO(p), err);
    const char* c = iov::ERR_CAST(p);
    EXPECT_EQ(iov::PTR_ERR(c), err);
  }
  iov::page* ok = lookup(0, pg);
  EXPECT_FALSE(iov::IS_ERR(ok));
  EXPECT_EQ(iov::PTR_ERR_OR_ZERO(ok), 0);
  EXPECT_FALSE(iov::IS_ERR(lookup(0, nullptr)));
  EXPECT_TRUE(iov::IS_ERR_OR_NULL(lookup(0, nullptr)));
  EXPECT_FALSE(iov::IS_ERR(reinterpret_cast<void*>(-4096L))) << "only the last 4095 values";
  EXPECT_TRUE(iov::IS_ERR_VALUE(static_cast<unsigned long>(-1L)));
  iov::free_page(pg);
}

}  // namespace
