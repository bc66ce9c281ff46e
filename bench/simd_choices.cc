// simd_choices.cc: the descriptions of the dispatched families' SIMD choices
// (simd_choices.hpp).
#include "simd_choices.hpp"

#include <cstdio>

#include "iov/internal/crc32c_simd.hpp"
#include "iov/internal/memcpy_nt.hpp"
#include "iov/internal/simd_level.hpp"
#include "iov/internal/zero_scan_simd.hpp"

namespace iov::bench {
namespace {

std::string describe(const iov::internal::simd_choice& c) {
  std::string s = iov::internal::simd_level_name(c.level);
  if (c.forced)
    return s + " (forced by IOV_SIMD)";
  char buf[64];
  std::snprintf(buf, sizeof buf, " (measured in %u us:", (c.choose_ns + 500) / 1000);
  s += buf;
  const char* sep = " ";
  for (int k = 0; k < iov::internal::kSimdLevels; k++) {
    if (c.trial_ns[k] == 0)
      continue;
    std::snprintf(buf, sizeof buf, "%s%s %u ns", sep,
                  iov::internal::simd_level_name(static_cast<iov::internal::simd_level>(k)), c.trial_ns[k]);
    s += buf;
    sep = ", ";
  }
  for (int k = 0; k < iov::internal::kSimdLevels; k++) {
    if (c.ruled_out & (1u << k)) {
      s += sep;
      s += iov::internal::simd_level_name(static_cast<iov::internal::simd_level>(k));
      s += " ruled out on this CPU";
      sep = ", ";
    }
  }
  return s + ")";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> simd_choices() {
  return {
      {"zero_scan", describe(iov::internal::zero_scan_choice())},
      {"crc32c", describe(iov::internal::crc32c_choice())},
      {"memcpy_nt", describe(iov::internal::memcpy_nt_choice())},
  };
}

}  // namespace iov::bench
