// clock.cc: the latency clock's calibration (clock.hpp).
#include "fio/clock.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace iov::fio {

namespace {

#if defined(__x86_64__) || defined(__i386__)
bool invariant_tsc() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return d & (1u << 8);
}

// A CLOCK_MONOTONIC reading and the TSC at the same moment: the TSC read on
// both sides of the clock, the pair with the narrowest bracket of a few kept,
// so that a preemption between the two reads does not skew the rate.
struct sample {
  uint64_t ns, tsc;
};
sample take_sample() {
  sample best{0, 0};
  uint64_t best_width = UINT64_MAX;
  for (int k = 0; k < 8; k++) {
    uint64_t a = __rdtsc(), ns = monotonic_ns(), b = __rdtsc();
    if (b - a < best_width) {
      best_width = b - a;
      best = {ns, a + (b - a) / 2};
    }
  }
  return best;
}
#endif

}  // namespace

latency_clock::latency_clock() {
#if defined(__x86_64__) || defined(__i386__)
  if (!invariant_tsc()) return;
  sample s0 = take_sample(), s1;
  do {
    s1 = take_sample();
  } while (s1.ns - s0.ns < 2000000);
  if (s1.tsc <= s0.tsc) return;
  ns_per_tick_q32_ = static_cast<uint64_t>((static_cast<unsigned __int128>(s1.ns - s0.ns) << 32) / (s1.tsc - s0.tsc));
  tsc_ = ns_per_tick_q32_ != 0;
#endif
}

const latency_clock& latency_clock::get() {
  static const latency_clock clock;
  return clock;
}

}  // namespace iov::fio
