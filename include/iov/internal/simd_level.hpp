// simd_level.hpp: the instruction-set levels the run-time dispatched kernels
// (zero scan, non-temporal copy, the CRC engine) choose between, the CPU
// probe, and the dispatch state each kernel family keeps (simd_dispatch).
//
// CPUID says what a CPU can run, not what runs fastest there (AVX-512 on AMD
// Zen 4 executes as two 256-bit halves), so each family chooses its level by
// measurement, as the kernel's lib/raid6/algos.c and crypto/xor.c do: at
// first use, once per process, it times a small fixed job at every level the
// CPU has and keeps the fastest. IOV_SIMD=portable|avx2|avx512 in the
// environment forces a level instead (never above the CPU's). Tests and
// benchmarks may install another level afterwards:
//
//   iov::internal::simd_choice c = iov::internal::zero_scan_choice();  // chosen level, trial times
//   if (iov::internal::cpu_supports(iov::internal::simd_level::avx2))
//     iov::internal::zero_scan_select(iov::internal::simd_level::avx2);
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "iov/config.hpp"

namespace iov::internal {

enum class simd_level : uint8_t { portable, avx2, avx512 };
inline constexpr int kSimdLevels = 3;

inline const char* simd_level_name(simd_level l) {
  switch (l) {
    case simd_level::avx512: return "avx512";
    case simd_level::avx2: return "avx2";
    default: return "portable";
  }
}

// Whether this CPU runs level l: CPUID and the OS's saved vector state
// (XCR0, which __builtin_cpu_supports checks too), lowered by
// simd_cpu_cap_for_test().
bool cpu_supports(simd_level l);

// Test hook: cpu_supports() answers as a CPU whose best level is `cap`
// (a cap above the CPU's own changes nothing); simd_level::avx512 restores
// the CPU's own answer. Choices already made stay until chosen again.
void simd_cpu_cap_for_test(simd_level cap);

// The CPU's vendor, family and model as CPUID reports them (the family and
// model with their extended bits, as /proc/cpuinfo shows them: AMD Zen 3 and
// Zen 4 are family 25, Zen 5 family 26), or a test's answer.
struct simd_cpu_id {
  bool amd = false;
  unsigned family = 0, model = 0;
};
simd_cpu_id simd_cpu();

// Test hook: simd_cpu() answers `id` until simd_cpu_id_for_test(nullptr)
// restores the CPU's own answer. Choices already made stay until chosen again.
void simd_cpu_id_for_test(const simd_cpu_id* id);

inline simd_level best_simd_level() {
  if (cpu_supports(simd_level::avx512)) return simd_level::avx512;
  if (cpu_supports(simd_level::avx2)) return simd_level::avx2;
  return simd_level::portable;
}

// The level IOV_SIMD names (portable, avx2 or avx512); false if it is unset
// or names none of them.
bool simd_env_level(simd_level* l);

// The CPU's best level lowered to what IOV_SIMD names: the ceiling of every
// family's choice (a family may run below it, by measurement or for want of
// its own requirements; its <family>_choice() says what it runs).
inline simd_level simd_ceiling() {
  simd_level best = best_simd_level(), want;
  return simd_env_level(&want) && want < best ? want : best;
}

// One family's choice of level, and how it was made.
struct simd_choice {
  simd_level level = simd_level::portable;
  bool forced = false;                 // IOV_SIMD named the level: nothing was timed
  uint32_t trial_ns[kSimdLevels] = {};  // the fastest run of the family's job at each level; 0: not run
  uint32_t choose_ns = 0;              // the whole choice took this long
  uint8_t ruled_out = 0;  // bit k: level k runs here, but the family's rule keeps it out of the measured choice
};

// A family's trial: runs its fixed small job once with the kernels of level l
// (which the CPU has) and returns the nanoseconds it took.
using simd_trial_fn = uint32_t (*)(simd_level l);
// A family's own requirements beyond cpu_supports() (the CRC's VPCLMULQDQ),
// or its rule: whether the measured choice may pick a level the CPU runs
// (a level known to lose where the trial cannot see it, on some CPUs).
using simd_supports_fn = bool (*)(simd_level l);

// Makes a family's choice: the forced level lowered to one `supports`
// allows, or else the fastest by `trial` among the levels it allows (each
// timed a few times, interleaved, after one untimed run: well under 100 µs a
// family on the CPUs measured, and bounded to about 300 µs where it is slow).
// A lower level must beat the best supported one by 5 % to be chosen, so
// that noise does not move a choice between two equal kernels. The levels
// `rule` refuses (if given; never the portable one) are not timed; IOV_SIMD
// may still force them.
simd_choice simd_choose(simd_trial_fn trial, simd_supports_fn supports, simd_supports_fn rule = nullptr);

// A clock for trials (CLOCK_MONOTONIC, nanoseconds).
uint64_t simd_trial_clock_ns();

// The zero scan's and the CRC engine's trial bytes: kSimdTrialBytes of zeroes,
// page-aligned, in pages of their own. Written once, at the first call:
// a buffer never written maps every page to the kernel's one zero page, and
// on AMD Zen the L1 data cache, whose way predictor works on virtual
// addresses, misses on each new alias of a line, so the levels timed there
// ran at about L2 speed, the AVX-512 scan behind the AVX2 one (16 KiB on
// Zen 5: 99 ns against 31 ns written, the AVX2 level 86 against 62).
inline constexpr size_t kSimdTrialBytes = 16384;
const unsigned char* simd_trial_zeroes();

// One kernel family's dispatch state, behind its <family>_select(),
// <family>_level() and <family>_choice(). Install(l) stores the family's
// kernels of level l in its function pointers (the CRC engine's is empty:
// each state reads the level when it starts); the family's resolvers, which
// those pointers start out at, call resolve() and then forward. Trial and
// Supports are the family's simd_trial_fn and simd_supports_fn, Rule its
// rule for the measured choice (none: every level Supports allows).
//
//   void install(simd_level l) { memcpy_nt_impl.store(kernel_of(l), ...); }
//   constinit simd_dispatch<install, trial> dispatch;
//   bool memcpy_nt_select(simd_level l) { return dispatch.select(l); }
template <void (*Install)(simd_level), uint32_t (*Trial)(simd_level), bool (*Supports)(simd_level) = cpu_supports,
          bool (*Rule)(simd_level) = nullptr>
class simd_dispatch {
 public:
  // Chooses and installs the family's level if nothing is installed yet.
  // Threads that come here at once wait for one choice.
  void resolve() {
    if (installed_.load(std::memory_order_acquire) == kUnresolved) resolve_slow();
  }

  // Installs level l; false (and no change) if the family cannot run it here.
  bool select(simd_level l) {
    if (!Supports(l)) return false;
    install(l);
    return true;
  }

  // The level installed now, choosing it first if nothing was installed yet:
  // one relaxed load where it was (the CRC engine's per-walk cost).
  IOV_ALWAYS_INLINE simd_level level() {
    int l = installed_.load(std::memory_order_relaxed);
    if (IOV_UNLIKELY(l == kUnresolved)) {
      resolve_slow();
      l = installed_.load(std::memory_order_relaxed);
    }
    return static_cast<simd_level>(l);
  }

  // The choice made at first use (made now if a select() came first; the
  // level installed stays as selected).
  simd_choice choice() {
    std::lock_guard<std::mutex> g(mu_);
    if (!chosen_) choose_locked();
    return choice_;
  }

  // Chooses again (under the current CPU cap and IOV_SIMD) and installs it.
  simd_choice choose() {
    std::lock_guard<std::mutex> g(mu_);
    choose_locked();
    install(choice_.level);
    return choice_;
  }

 private:
  static constexpr int kUnresolved = -1;

  IOV_NOINLINE void resolve_slow() {
    std::lock_guard<std::mutex> g(mu_);
    if (installed_.load(std::memory_order_relaxed) != kUnresolved) return;
    if (!chosen_) choose_locked();
    install(choice_.level);
  }

  void choose_locked() {
    choice_ = simd_choose(Trial, Supports, Rule);
    chosen_ = true;
  }

  void install(simd_level l) {
    Install(l);
    installed_.store(static_cast<int>(l), std::memory_order_release);
  }

  std::mutex mu_;
  simd_choice choice_{};  // under mu_
  bool chosen_ = false;   // under mu_
  std::atomic<int> installed_{kUnresolved};
};

}  // namespace iov::internal
