// linux_kernel_header_test.cc: iov/linux/kernel.hpp, the opt-in header of
// the kernel's generic vocabulary, against the kernel's definitions.
//
//   ctest -R linux_kernel_header_test
#include "iov/linux/kernel.hpp"

#include <climits>
#include <cstring>

#include <gtest/gtest.h>

#include "iov/iov.hpp"

namespace {

TEST(LinuxKernelHeader, TypesAndArithmetic) {
  static_assert(sizeof(iov::u8) == 1 && sizeof(iov::u16) == 2 && sizeof(iov::u32) == 4 && sizeof(iov::u64) == 8);
  static_assert(iov::s8(-1) < 0 && iov::s64(-1) < 0);
  EXPECT_EQ(DIV_ROUND_UP(4097, 4096), 2);
  EXPECT_EQ(DIV_ROUND_UP(4096, 4096), 1);
  EXPECT_EQ(round_up(5000ul, 4096ul), 8192ul);
  EXPECT_EQ(round_up(4096ul, 4096ul), 4096ul);
  EXPECT_EQ(round_down(5000u, 512u), 4608u);
  EXPECT_EQ(ALIGN(13u, 8), 16u);
  EXPECT_EQ(ALIGN(16u, 8), 16u);
  int arr[7];
  EXPECT_EQ(ARRAY_SIZE(arr), 7u);
  EXPECT_EQ(min_t(size_t, 3, -1), 3u) << "compared as size_t: -1 is huge";
  EXPECT_EQ(max_t(int, 3, -1), 3);
  EXPECT_EQ(iov::min(3, 5l), 3l);
  EXPECT_EQ(iov::max(3u, 9u), 9u);
  EXPECT_EQ(iov::umin(-1, 5), 5u);
  EXPECT_EQ(iov::umax(-1, 5), UINT_MAX);
  EXPECT_EQ(iov::clamp(12, 0, 10), 10);
  EXPECT_EQ(iov::clamp(-3, 0, 10), 0);
  EXPECT_EQ(iov::clamp(4, 0, 10), 4);
  EXPECT_TRUE(likely(1 + 1 == 2));
  EXPECT_FALSE(unlikely(1 + 1 == 3));
}

TEST(LinuxKernelHeader, AllocationsAndWarnings) {
  auto* z = static_cast<iov::u8*>(iov::kzalloc(100, iov::GFP_KERNEL));
  ASSERT_NE(z, nullptr);
  for (int k = 0; k < 100; k++)
    ASSERT_EQ(z[k], 0);
  iov::kfree(z);
  auto* c = static_cast<iov::u32*>(iov::kcalloc(10, sizeof(iov::u32), iov::GFP_KERNEL));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c[9], 0u);
  iov::kvfree(c);
  EXPECT_EQ(iov::kmalloc_array(SIZE_MAX / 2, 4, iov::GFP_KERNEL), nullptr) << "overflow";
  iov::kfree(nullptr);
  int fired = 0;
  for (int k = 0; k < 3; k++)
    if (WARN_ON_ONCE(k > 0))
      fired++;
  EXPECT_EQ(fired, 2) << "yields its condition every time, prints once";
  EXPECT_FALSE(WARN_ON(false));
  BUG_ON(false);
  pr_debug("%d\n", 1);
}

}  // namespace
