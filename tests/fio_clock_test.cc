// Tests of iov-fio's latency clock (src/tools/fio/clock.hpp): its ticks
// converted to nanoseconds agree with CLOCK_MONOTONIC over an interval
// bracketed by CLOCK_MONOTONIC readings on both sides, and its conversions
// are each other's inverse.
#include "fio/clock.hpp"

#include <gtest/gtest.h>
#include <time.h>

namespace {

using iov::fio::latency_clock;
using iov::fio::monotonic_ns;

TEST(FioClock, TicksInNanosecondsAgreeWithTheMonotonicClock) {
  const latency_clock& c = latency_clock::get();
  // A tick reading lies between the two monotonic readings around it, so
  // the interval between two tick readings lies between the inner and the
  // outer monotonic intervals; the calibration's error (a few parts in
  // 100000 over its 2 ms) is far inside the 1 % allowed.
  uint64_t m0 = monotonic_ns(), k0 = c.ticks(), m1 = monotonic_ns();
  timespec nap{0, 30000000};
  nanosleep(&nap, nullptr);
  uint64_t m2 = monotonic_ns(), k1 = c.ticks(), m3 = monotonic_ns();
  ASSERT_GE(k1, k0);
  const double measured = static_cast<double>(c.ns(k1 - k0));
  EXPECT_GE(measured, 0.99 * static_cast<double>(m2 - m1));
  EXPECT_LE(measured, 1.01 * static_cast<double>(m3 - m0));
}

TEST(FioClock, ConversionsAreInverses) {
  const latency_clock& c = latency_clock::get();
  for (uint64_t ns : {uint64_t{0}, uint64_t{1000}, uint64_t{1000000000}, uint64_t{3600} * 1000000000}) {
    const uint64_t back = c.ns(c.ticks_for_ns(ns));
    EXPECT_LE(back, ns);  // both round down
    EXPECT_GE(back + 2 + ns / 1000000000, ns) << ns;  // within a tick's nanosecond and the rate's rounding
  }
  if (!c.uses_tsc()) {
    EXPECT_EQ(c.ns(12345), 12345u);  // the monotonic clock's own nanoseconds
  }
}

}  // namespace
