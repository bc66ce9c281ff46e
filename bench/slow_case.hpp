// slow_case.hpp: a way for tests to make one case slower by real work, so
// that a comparison of two runs can be shown to flag that case and no other
// (scripts/bench-compare's test). Off unless the environment asks:
//
//   IOV_BENCH_SLOW_CASE=iov_kunit_benchmark_crc32c_l2_512 iov-bench ...
//
// spins on the running thread for IOV_BENCH_SLOW_PERCENT (default 30) percent
// more CPU time while that case runs, through a timer on the thread's CPU
// clock; every other case runs as it would.
#pragma once

#include <string>

namespace iov::bench {

// Reads the environment and arms the timer if a case is named; call once,
// on the thread that runs the cases, before the first one.
void slow_case_setup();

// The case about to run (the one the reporter will see next).
void slow_case_next(const std::string& name);

}  // namespace iov::bench
