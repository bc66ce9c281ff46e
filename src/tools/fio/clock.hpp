// clock.hpp: the clock of iov-fio's completion latencies, as fio's default
// clocksource=cpu: the CPU's invariant time-stamp counter, scaled to
// nanoseconds by a rate measured once per process against CLOCK_MONOTONIC.
// Two reads a request are on the path of every I/O; on the Intel Xeon
// (family 6 model 207) of this project's VMs a vDSO clock_gettime costs about
// 180 cycles and rdtsc about 85. Without an invariant TSC (or off x86) the
// ticks are CLOCK_MONOTONIC's nanoseconds.
//
//   const latency_clock& c = latency_clock::get();
//   uint64_t t0 = c.ticks();  ...  uint64_t lat_ns = c.ns(c.ticks() - t0);
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace iov::fio {

uint64_t monotonic_ns();  // status.hpp

class latency_clock {
 public:
  // The process's clock, calibrated at the first call (about 2 ms).
  static const latency_clock& get();

  bool uses_tsc() const { return tsc_; }
  uint64_t ticks() const {
#if defined(__x86_64__) || defined(__i386__)
    if (tsc_)
      return __rdtsc();
#endif
    return monotonic_ns();
  }
  // A number of ticks in nanoseconds, and back.
  uint64_t ns(uint64_t ticks) const {
    return tsc_ ? static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * ns_per_tick_q32_) >> 32) : ticks;
  }
  uint64_t ticks_for_ns(uint64_t ns) const {
    return tsc_ ? static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) / ns_per_tick_q32_) : ns;
  }

 private:
  latency_clock();
  bool tsc_ = false;
  uint64_t ns_per_tick_q32_ = uint64_t{1} << 32;  // nanoseconds per tick, 32 fraction bits
};

}  // namespace iov::fio
