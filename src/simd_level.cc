// simd_level.cc: the CPU probe behind cpu_supports(), IOV_SIMD, and the
// measured choice of level that every dispatched kernel family makes at
// first use (simd_choose; simd_level.hpp).
//
//   simd_choice c = simd_choose(trial, supports);   // c.level: the fastest that runs here
#include "iov/internal/simd_level.hpp"

#include <time.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace iov::internal {
namespace {

// Beyond this the timed rounds stop (at least one runs): a slow machine or a
// sanitizer build keeps its first use short.
constexpr uint64_t kChooseBudgetNs = 300'000;
constexpr int kRounds = 5;

constinit std::atomic<int> cpu_cap{static_cast<int>(simd_level::avx512)};

// A test's answer for simd_cpu(): set under the tests' own ordering (they
// choose again afterwards), read by choices made under their dispatch locks.
constinit std::atomic<bool> cpu_id_forced{false};
simd_cpu_id cpu_id_for_test;

simd_cpu_id cpu_id_of_cpuid() {
  simd_cpu_id id;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return id;
  id.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return id;
  const unsigned base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
  id.family = base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family;
  id.model = base_family == 0xf || base_family == 6 ? base_model | (((a >> 16) & 0xf) << 4) : base_model;
#endif
  return id;
}

bool cpu_has(simd_level l) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();  // static initializers may run before libgcc's
  switch (l) {
    case simd_level::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && cpu_has(simd_level::avx2);
    case simd_level::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    default:
      return true;
  }
#else
  return l == simd_level::portable;
#endif
}

// The highest level at or below l that runs[] allows; the portable one when none does.
simd_level highest_at_or_below(simd_level l, const bool (&runs)[kSimdLevels]) {
  while (l != simd_level::portable && !runs[static_cast<int>(l)])
    l = static_cast<simd_level>(static_cast<int>(l) - 1);
  return l;
}

}  // namespace

bool cpu_supports(simd_level l) {
  return static_cast<int>(l) <= cpu_cap.load(std::memory_order_relaxed) && cpu_has(l);
}

simd_cpu_id simd_cpu() {
  if (cpu_id_forced.load(std::memory_order_acquire)) return cpu_id_for_test;
  static const simd_cpu_id own = cpu_id_of_cpuid();
  return own;
}

void simd_cpu_id_for_test(const simd_cpu_id* id) {
  cpu_id_forced.store(false, std::memory_order_release);
  if (id == nullptr) return;
  cpu_id_for_test = *id;
  cpu_id_forced.store(true, std::memory_order_release);
}

void simd_cpu_cap_for_test(simd_level cap) { cpu_cap.store(static_cast<int>(cap), std::memory_order_relaxed); }

bool simd_env_level(simd_level* l) {
  const char* env = std::getenv("IOV_SIMD");
  if (env == nullptr) return false;
  for (int k = 0; k < kSimdLevels; k++) {
    if (std::strcmp(env, simd_level_name(static_cast<simd_level>(k))) == 0) {
      *l = static_cast<simd_level>(k);
      return true;
    }
  }
  return false;
}

uint64_t simd_trial_clock_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

const unsigned char* simd_trial_zeroes() {
  alignas(4096) static unsigned char bytes[kSimdTrialBytes];
  static const unsigned char* written = [] {
    std::memset(bytes, 0, sizeof bytes);
    asm volatile("" ::"r"(bytes) : "memory");  // stores the compiler may not drop
    return bytes;
  }();
  return written;
}

simd_choice simd_choose(simd_trial_fn trial, simd_supports_fn supports, simd_supports_fn rule) {
  const uint64_t start = simd_trial_clock_ns();
  simd_choice c;
  bool runs[kSimdLevels];
  for (int k = 0; k < kSimdLevels; k++) runs[k] = supports(static_cast<simd_level>(k));
  simd_level forced;
  if (simd_env_level(&forced)) {
    c.forced = true;
    c.level = highest_at_or_below(forced, runs);
  } else {
    for (int k = 1; k < kSimdLevels; k++) {
      if (runs[k] && rule != nullptr && !rule(static_cast<simd_level>(k))) {
        runs[k] = false;
        c.ruled_out |= static_cast<uint8_t>(1u << k);
      }
    }
    const simd_level best = highest_at_or_below(simd_level::avx512, runs);
    // One untimed run each first: page faults on the job's buffers, the code
    // brought into cache, and (on Intel) the wide units powered up, which
    // would otherwise count against whichever level runs first.
    uint32_t fastest[kSimdLevels];
    for (int k = 0; k < kSimdLevels; k++) {
      fastest[k] = UINT32_MAX;
      if (runs[k]) trial(static_cast<simd_level>(k));
    }
    for (int r = 0; r < kRounds && (r == 0 || simd_trial_clock_ns() - start < kChooseBudgetNs); r++) {
      for (int k = 0; k < kSimdLevels; k++) {
        if (!runs[k]) continue;
        uint32_t t = trial(static_cast<simd_level>(k));
        t = t ? t : 1;  // a 0 reads as "not run"
        fastest[k] = t < fastest[k] ? t : fastest[k];
      }
    }
    c.level = best;
    for (int k = 0; k < kSimdLevels; k++) {
      if (!runs[k]) continue;
      c.trial_ns[k] = fastest[k];
      if (uint64_t{fastest[k]} * 105 < uint64_t{fastest[static_cast<int>(best)]} * 100 &&
          fastest[k] < fastest[static_cast<int>(c.level)])
        c.level = static_cast<simd_level>(k);
    }
  }
  uint64_t took = simd_trial_clock_ns() - start;
  c.choose_ns = took < UINT32_MAX ? static_cast<uint32_t>(took) : UINT32_MAX;
  return c;
}

}  // namespace iov::internal
