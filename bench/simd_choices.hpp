// simd_choices.hpp: what iov-bench reports of the SIMD level each dispatched
// kernel family chose at first use (simd_level.hpp): the level, each
// candidate's trial time, or that IOV_SIMD forced it. Printed in the KTAP
// header and stored in the JSON context, so that every figure comes with the
// kernels that made it:
//
//   # simd zero_scan: avx512 (measured in 41 us: portable 1203 ns, avx2 402 ns, avx512 288 ns)
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace iov::bench {

// (family, description) for the zero scan, the CRC engine and the
// non-temporal copy, in that order; makes each family's choice if it was not
// made yet.
std::vector<std::pair<std::string, std::string>> simd_choices();

}  // namespace iov::bench
