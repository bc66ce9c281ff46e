// simd_dispatch_test.cc: the measured choice of SIMD level (simd_level.hpp)
// for each dispatched family — zero scan, non-temporal copy, CRC engine:
// under every CPUID answer a test can force (simd_cpu_cap_for_test) the
// choice is a level the CPU has, IOV_SIMD forces a level but never one above
// the CPU's, and the kernels installed by a choice agree with plain
// references (a byte loop, memcpy, a bitwise CRC).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "iov/crc32c.hpp"
#include "iov/internal/crc32c_simd.hpp"
#include "iov/internal/memcpy_nt.hpp"
#include "iov/internal/simd_level.hpp"
#include "iov/internal/zero_scan_simd.hpp"
#include "iov/zero_scan.hpp"
#include "support/simd_levels.hpp"

namespace {

using iov::internal::simd_choice;
using iov::internal::simd_level;

struct simd_family {
  const char* name;
  simd_choice (*choose)();
  simd_level (*level)();
  bool (*select)(simd_level);
};

const simd_family kSimdFamilies[] = {
    {"zero_scan", iov::internal::zero_scan_choose, iov::internal::zero_scan_level, iov::internal::zero_scan_select},
    {"memcpy_nt", iov::internal::memcpy_nt_choose, iov::internal::memcpy_nt_level, iov::internal::memcpy_nt_select},
    {"crc32c", iov::internal::crc32c_choose, iov::internal::crc32c_level, iov::internal::crc32c_select},
};

// The CPU's own answer, taken before any cap.
bool cpu_really_supports(simd_level l) {
  iov::internal::simd_cpu_cap_for_test(simd_level::avx512);
  return iov::internal::cpu_supports(l);
}

// Runs each test with IOV_SIMD unset (set_env() sets it), and restores the
// environment, the CPU's answer and every family's choice afterwards.
class SimdDispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("IOV_SIMD");
    had_env_ = env != nullptr;
    if (had_env_) saved_env_ = env;
    unsetenv("IOV_SIMD");
  }
  void TearDown() override {
    if (had_env_) setenv("IOV_SIMD", saved_env_.c_str(), 1);
    else unsetenv("IOV_SIMD");
    iov::internal::simd_cpu_cap_for_test(simd_level::avx512);
    iov::internal::simd_cpu_id_for_test(nullptr);
    for (const simd_family& f : kSimdFamilies) f.choose();
  }
  static void set_env(const char* v) { setenv("IOV_SIMD", v, 1); }

 private:
  bool had_env_ = false;
  std::string saved_env_;
};

// Whatever the CPU answers, each family picks a level at or below that answer
// that the CPU really has, times every level it may pick (and no other), and
// installs what it picked; select() refuses the levels above the answer.
TEST_F(SimdDispatch, ChoiceIsALevelTheCpuHasUnderEveryCap) {
  for (simd_level cap : iov_test::kAllSimdLevels) {
    bool real[iov::internal::kSimdLevels];
    for (simd_level l : iov_test::kAllSimdLevels) real[static_cast<int>(l)] = cpu_really_supports(l);
    iov::internal::simd_cpu_cap_for_test(cap);
    for (const simd_family& f : kSimdFamilies) {
      SCOPED_TRACE(std::string(f.name) + " under cap " + iov::internal::simd_level_name(cap));
      simd_choice c = f.choose();
      EXPECT_FALSE(c.forced);
      EXPECT_LE(c.level, cap);
      EXPECT_TRUE(real[static_cast<int>(c.level)]);
      EXPECT_EQ(f.level(), c.level);
      EXPECT_NE(c.trial_ns[static_cast<int>(c.level)], 0u);
      for (simd_level l : iov_test::kAllSimdLevels) {
        const int k = static_cast<int>(l);
        if (l > cap || !real[k]) {
          EXPECT_EQ(c.trial_ns[k], 0u) << iov::internal::simd_level_name(l) << " timed";
          EXPECT_FALSE(f.select(l)) << iov::internal::simd_level_name(l) << " installed";
        } else if (c.ruled_out & (1u << k)) {
          EXPECT_EQ(c.trial_ns[k], 0u) << iov::internal::simd_level_name(l) << " ruled out but timed";
          EXPECT_NE(l, simd_level::portable);
        } else if (f.select != iov::internal::crc32c_select || l == simd_level::portable) {
          // (The CRC engine needs more than the level's features: PCLMULQDQ, VPCLMULQDQ.)
          EXPECT_NE(c.trial_ns[k], 0u) << iov::internal::simd_level_name(l) << " not timed";
        }
        // The chosen level is the fastest, or the best within 5 % of it.
        if (c.trial_ns[k] != 0) {
          EXPECT_LE(uint64_t{c.trial_ns[static_cast<int>(c.level)]} * 100, uint64_t{c.trial_ns[k]} * 105);
        }
      }
      EXPECT_EQ(f.level(), c.level);
    }
  }
}

// IOV_SIMD names the level, lowered to the CPU's (capped) answer; nothing is
// timed. A value that names no level is ignored.
TEST_F(SimdDispatch, EnvironmentForcesALevelNeverAboveTheCpus) {
  for (simd_level cap : iov_test::kAllSimdLevels) {
    iov::internal::simd_cpu_cap_for_test(cap);
    const simd_level best = iov::internal::best_simd_level();
    for (simd_level want : iov_test::kAllSimdLevels) {
      set_env(iov::internal::simd_level_name(want));
      // The zero scan and the copy run every level cpu_supports() allows.
      for (const simd_family& f : {kSimdFamilies[0], kSimdFamilies[1]}) {
        SCOPED_TRACE(std::string(f.name) + " IOV_SIMD=" + iov::internal::simd_level_name(want) + " cap " +
                     iov::internal::simd_level_name(cap));
        simd_choice c = f.choose();
        EXPECT_TRUE(c.forced);
        EXPECT_EQ(c.level, std::min(want, best));
        EXPECT_EQ(f.level(), c.level);
        for (uint32_t t : c.trial_ns) EXPECT_EQ(t, 0u);
      }
      simd_choice c = iov::internal::crc32c_choose();
      EXPECT_TRUE(c.forced);
      EXPECT_LE(c.level, std::min(want, best));
    }
  }
  set_env("sse9");
  EXPECT_FALSE(iov::internal::zero_scan_choose().forced);
}

// simd_choose() with a fake trial (avx512 fastest) on a CPU that runs every
// level: a rule keeps the levels it refuses out of the measured choice (not
// timed, reported in ruled_out), never the portable one, and IOV_SIMD still
// forces a ruled-out level.
uint32_t simd_fake_trial(simd_level l) { return 300 - 100 * static_cast<uint32_t>(l); }
bool simd_runs_all(simd_level) { return true; }
bool simd_rule_no_avx512(simd_level l) { return l != simd_level::avx512; }
bool simd_rule_portable_only(simd_level l) { return l == simd_level::portable; }
bool simd_rule_none(simd_level) { return false; }

TEST_F(SimdDispatch, RuleKeepsLevelsOutOfTheMeasuredChoiceOnly) {
  simd_choice c = iov::internal::simd_choose(simd_fake_trial, simd_runs_all);
  EXPECT_EQ(c.level, simd_level::avx512);
  EXPECT_EQ(c.ruled_out, 0);
  c = iov::internal::simd_choose(simd_fake_trial, simd_runs_all, simd_rule_no_avx512);
  EXPECT_EQ(c.level, simd_level::avx2);
  EXPECT_EQ(c.ruled_out, 1u << static_cast<int>(simd_level::avx512));
  EXPECT_EQ(c.trial_ns[static_cast<int>(simd_level::avx512)], 0u);
  EXPECT_EQ(c.trial_ns[static_cast<int>(simd_level::avx2)], 200u);
  c = iov::internal::simd_choose(simd_fake_trial, simd_runs_all, simd_rule_portable_only);
  EXPECT_EQ(c.level, simd_level::portable);
  EXPECT_EQ(c.ruled_out, 0b110);
  c = iov::internal::simd_choose(simd_fake_trial, simd_runs_all, simd_rule_none);  // portable stays
  EXPECT_EQ(c.level, simd_level::portable);
  EXPECT_EQ(c.ruled_out, 0b110);
  EXPECT_EQ(c.trial_ns[0], 300u);
  set_env("avx512");
  c = iov::internal::simd_choose(simd_fake_trial, simd_runs_all, simd_rule_no_avx512);
  EXPECT_TRUE(c.forced);
  EXPECT_EQ(c.level, simd_level::avx512);
}

// The zero scan's rule: on AMD family 25 (Zen 3, Zen 4) the measured choice
// leaves its AVX-512 level out, on any other CPU the rule keeps nothing out;
// the other families have no rule; IOV_SIMD=avx512 still forces the level.
TEST_F(SimdDispatch, ZeroScanLeavesAvx512OutOnAmdFamily25) {
  const bool has_avx512 = cpu_really_supports(simd_level::avx512);
  const iov::internal::simd_cpu_id cpus[] = {{true, 25, 17}, {true, 25, 97}, {true, 26, 2}, {true, 23, 49}, {false, 6, 207}};
  for (const iov::internal::simd_cpu_id& id : cpus) {
    SCOPED_TRACE(std::string(id.amd ? "AMD" : "Intel") + " family " + std::to_string(id.family));
    iov::internal::simd_cpu_id_for_test(&id);
    const bool ruled = id.amd && id.family == 25 && has_avx512;
    simd_choice c = iov::internal::zero_scan_choose();
    EXPECT_EQ(c.ruled_out, ruled ? 1u << static_cast<int>(simd_level::avx512) : 0u);
    if (ruled) {
      EXPECT_NE(c.level, simd_level::avx512);
      EXPECT_EQ(c.trial_ns[static_cast<int>(simd_level::avx512)], 0u);
      EXPECT_TRUE(iov::internal::zero_scan_select(simd_level::avx512));  // the tests' kernels still run
    } else {
      EXPECT_EQ(c.trial_ns[static_cast<int>(simd_level::avx512)] != 0, has_avx512);
    }
    EXPECT_EQ(iov::internal::memcpy_nt_choose().ruled_out, 0);
    EXPECT_EQ(iov::internal::crc32c_choose().ruled_out, 0);
    set_env("avx512");
    c = iov::internal::zero_scan_choose();
    EXPECT_TRUE(c.forced);
    EXPECT_EQ(c.level, has_avx512 ? simd_level::avx512 : iov::internal::best_simd_level());
    unsetenv("IOV_SIMD");
  }
}

// simd_cpu() against /proc/cpuinfo's first processor, where it names one.
TEST_F(SimdDispatch, CpuIdAgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor;
  long family = -1, model = -1;
  while (std::getline(in, line) && !line.empty()) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key == "vendor_id") vendor = value;
    if (key == "cpu family") family = std::stol(value);
    if (key == "model") model = std::stol(value);
  }
  if (vendor.empty() || family < 0 || model < 0) GTEST_SKIP() << "no x86 /proc/cpuinfo";
  const iov::internal::simd_cpu_id id = iov::internal::simd_cpu();
  EXPECT_EQ(id.amd, vendor == "AuthenticAMD");
  EXPECT_EQ(id.family, static_cast<unsigned>(family));
  EXPECT_EQ(id.model, static_cast<unsigned>(model));
}

// A bitwise CRC32C, raw update (no inversion), independent of the library.
uint32_t simd_bitwise_crc32c(uint32_t crc, const unsigned char* p, size_t len) {
  for (size_t k = 0; k < len; k++) {
    crc ^= p[k];
    for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return crc;
}

// The kernels each choice installs, under every cap, on random lengths,
// alignments and (for the scan) positions of one non-zero byte.
TEST_F(SimdDispatch, ChosenKernelsAgreeWithReferences) {
  std::mt19937_64 rng(0x51d);
  std::vector<unsigned char> src(20000 + 64), dst(20000 + 64);
  for (simd_level cap : iov_test::kAllSimdLevels) {
    iov::internal::simd_cpu_cap_for_test(cap);
    for (const simd_family& f : kSimdFamilies) f.choose();
    for (int round = 0; round < 200; round++) {
      const size_t len = rng() % 20000, off = rng() % 64;
      SCOPED_TRACE("cap " + std::string(iov::internal::simd_level_name(cap)) + " len " + std::to_string(len) +
                   " off " + std::to_string(off));
      unsigned char* p = src.data() + off;
      std::memset(src.data(), 0, src.size());
      const size_t at = len ? rng() % len : 0;
      if (len && round % 2) p[at] = static_cast<unsigned char>(1 + rng() % 255);
      const bool zero = !(len && round % 2);
      EXPECT_EQ(iov::mem_is_zero(p, len), zero);
      EXPECT_EQ(iov::memchr_inv(p, 0, len), zero ? nullptr : p + at);

      for (size_t k = 0; k < len; k++) p[k] = static_cast<unsigned char>(rng());
      const size_t doff = rng() % 64;
      iov::internal::memcpy_nt(dst.data() + doff, p, len);
      iov::internal::memcpy_nt_fence();
      EXPECT_EQ(std::memcmp(dst.data() + doff, p, len), 0);

      iov::crc32c_state st;
      iov::crc32c_init(&st, ~0u);
      for (size_t done = 0; done < len;) {
        size_t n = std::min<size_t>(len - done, 1 + rng() % 4096);
        iov::crc32c_update(&st, p + done, n);
        done += n;
      }
      EXPECT_EQ(iov::crc32c_final(&st), simd_bitwise_crc32c(~0u, p, len));
    }
  }
}

}  // namespace
