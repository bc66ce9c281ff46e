// simd_levels.cc: the instance names of the per-level tests (see simd_levels.hpp).
#include "support/simd_levels.hpp"

namespace iov_test {

std::string simd_level_param_name(const ::testing::TestParamInfo<iov::internal::simd_level>& info) {
  return iov::internal::simd_level_name(info.param);
}

}  // namespace iov_test
