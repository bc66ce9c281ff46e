// simd_level.hpp: the instruction-set levels the run-time dispatched kernels
// (zero scan, non-temporal copy) choose between, and the CPU probe.
//
// Each kernel family resolves its level once, on first use, to the best the
// CPU supports (IOV_SIMD=portable|avx2 in the environment caps it); tests and
// benchmarks may force a lower one:
//
//   if (iov::internal::cpu_supports(iov::internal::simd_level::avx2))
//     iov::internal::zero_scan_select(iov::internal::simd_level::avx2);
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace iov::internal {

enum class simd_level : uint8_t { portable, avx2, avx512 };

inline const char* simd_level_name(simd_level l) {
  switch (l) {
    case simd_level::avx512: return "avx512";
    case simd_level::avx2: return "avx2";
    default: return "portable";
  }
}

// __builtin_cpu_supports also checks that the OS saves the vector state
// (XCR0), so a level it reports is safe to run.
inline bool cpu_supports(simd_level l) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();  // static initializers may run before libgcc's
  switch (l) {
    case simd_level::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && cpu_supports(simd_level::avx2);
    case simd_level::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    default:
      return true;
  }
#else
  return l == simd_level::portable;
#endif
}

inline simd_level best_simd_level() {
  if (cpu_supports(simd_level::avx512)) return simd_level::avx512;
  if (cpu_supports(simd_level::avx2)) return simd_level::avx2;
  return simd_level::portable;
}

// The level a kernel family resolves to: the best the CPU has, lowered by the
// environment variable IOV_SIMD=portable|avx2 (to compare levels, or to rule
// out a suspect kernel in the field). A level above the CPU's is ignored.
inline simd_level default_simd_level() {
  simd_level best = best_simd_level();
  const char* env = std::getenv("IOV_SIMD");
  if (env == nullptr) return best;
  simd_level want = best;
  if (std::strcmp(env, "portable") == 0) want = simd_level::portable;
  else if (std::strcmp(env, "avx2") == 0) want = simd_level::avx2;
  return want < best ? want : best;
}

}  // namespace iov::internal
