// simd_level.hpp: the instruction-set levels the run-time dispatched kernels
// (zero scan, non-temporal copy) choose between, the CPU probe, and the
// dispatch state each kernel family keeps (simd_dispatch).
//
// Each kernel family resolves its level once, on first use, to the best the
// CPU supports (IOV_SIMD=portable|avx2 in the environment caps it); tests and
// benchmarks may force a lower one:
//
//   if (iov::internal::cpu_supports(iov::internal::simd_level::avx2))
//     iov::internal::zero_scan_select(iov::internal::simd_level::avx2);
#pragma once

#include <atomic>
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

// One kernel family's dispatch state, behind its <family>_select() and
// <family>_level(). Install(l) stores the family's kernels of level l in its
// function pointers; the family's resolvers, which those pointers start out
// at, call resolve() and then forward.
//
//   void install(simd_level l) { memcpy_nt_impl.store(kernel_of(l), ...); }
//   constinit simd_dispatch<install> dispatch;
//   bool memcpy_nt_select(simd_level l) { return dispatch.select(l); }
template <void (*Install)(simd_level)>
class simd_dispatch {
 public:
  // Installs the level the family resolves to (default_simd_level()).
  void resolve() { install(default_simd_level()); }

  // Installs level l; false (and no change) if the CPU lacks it.
  bool select(simd_level l) {
    if (!cpu_supports(l)) return false;
    install(l);
    return true;
  }

  // The level installed now, resolving it first if nothing was installed yet.
  simd_level level() {
    int l = installed_.load(std::memory_order_relaxed);
    if (l == kUnresolved) {
      resolve();
      l = installed_.load(std::memory_order_relaxed);
    }
    return static_cast<simd_level>(l);
  }

 private:
  static constexpr int kUnresolved = -1;

  void install(simd_level l) {
    Install(l);
    installed_.store(static_cast<int>(l), std::memory_order_relaxed);
  }

  std::atomic<int> installed_{kUnresolved};
};

}  // namespace iov::internal
