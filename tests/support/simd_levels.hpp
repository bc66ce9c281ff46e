// simd_levels.hpp: runs a test at every SIMD level of a run-time dispatched
// kernel family (zero scan, non-temporal copy) that this CPU has, through the
// family's <family>_select(), <family>_level() and <family>_choice().
//
//   class ZeroScanLevel : public iov_test::SimdLevelTest<iov::internal::zero_scan_select,
//                                                        iov::internal::zero_scan_level,
//                                                        iov::internal::zero_scan_choice> {};
//   TEST_P(ZeroScanLevel, Short) { ... }   // runs at GetParam()
//   INSTANTIATE_TEST_SUITE_P(Levels, ZeroScanLevel, iov_test::all_simd_levels(), iov_test::simd_level_param_name);
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "iov/internal/simd_level.hpp"

namespace iov_test {

inline constexpr iov::internal::simd_level kAllSimdLevels[] = {
    iov::internal::simd_level::portable, iov::internal::simd_level::avx2, iov::internal::simd_level::avx512};

// Every level, lowest first; a case at a level the CPU lacks is skipped.
inline auto all_simd_levels() { return ::testing::ValuesIn(kAllSimdLevels); }

// Names the instances after the level: Levels/ZeroScanLevel.Short/avx2.
std::string simd_level_param_name(const ::testing::TestParamInfo<iov::internal::simd_level>& info);

// Installs the level under test before each case (skipping it where the CPU
// lacks it) and the family's chosen level after it, so later cases run as
// shipped.
template <bool (*Select)(iov::internal::simd_level), iov::internal::simd_level (*Level)(),
          iov::internal::simd_choice (*Choice)()>
class SimdLevelTest : public ::testing::TestWithParam<iov::internal::simd_level> {
 protected:
  void SetUp() override {
    if (!Select(GetParam())) GTEST_SKIP() << "CPU lacks " << iov::internal::simd_level_name(GetParam());
    ASSERT_EQ(Level(), GetParam());
  }
  void TearDown() override { Select(Choice().level); }
};

}  // namespace iov_test
