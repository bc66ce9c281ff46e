// slow_case.cc: see slow_case.hpp.
#include "slow_case.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace iov::bench {

namespace {

// The timer asks for every 1 ms of the thread's CPU time; the kernel checks
// CPU timers on its tick (4 ms at HZ=250), so each expiry spins in
// proportion to the CPU time used since the last one.
constexpr long kPeriodNs = 1000000;
std::string g_slow_name;
std::atomic<bool> g_active{false};
long g_percent = 0;
// The thread's CPU time at the last expiry, or when the case started; lock-free
// atomics are what a signal handler may share with the code it interrupts.
std::atomic<long> g_mark_ns{0};

long thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

// Burns g_percent of the CPU time used since the mark: async-signal-safe.
void on_tick(int) {
  if (!g_active.load(std::memory_order_relaxed))
    return;
  const long now = thread_cpu_ns();
  const long until = now + (now - g_mark_ns.load(std::memory_order_relaxed)) * g_percent / 100;
  while (thread_cpu_ns() < until) {
  }
  g_mark_ns.store(thread_cpu_ns(), std::memory_order_relaxed);
}

}  // namespace

void slow_case_setup() {
  const char* name = std::getenv("IOV_BENCH_SLOW_CASE");
  if (!name || !*name)
    return;
  long percent = 30;
  if (const char* p = std::getenv("IOV_BENCH_SLOW_PERCENT"))
    percent = std::strtol(p, nullptr, 10);
  if (percent <= 0 || percent > 1000) {
    std::fprintf(stderr, "iov-bench: IOV_BENCH_SLOW_PERCENT=%ld: expected 1 to 1000\n", percent);
    std::exit(2);
  }
  g_slow_name = name;
  g_percent = percent;
  struct sigaction sa {};
  sa.sa_handler = on_tick;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGPROF;
  ev._sigev_un._tid = gettid();
  timer_t timer;
  itimerspec period{{0, kPeriodNs}, {0, kPeriodNs}};
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &timer) != 0 || timer_settime(timer, 0, &period, nullptr) != 0) {
    std::perror("iov-bench: IOV_BENCH_SLOW_CASE: timer");
    std::exit(1);
  }
  std::fprintf(stderr, "iov-bench: IOV_BENCH_SLOW_CASE: %s runs %ld%% slower (a test of comparisons)\n", name,
               percent);
}

void slow_case_next(const std::string& name) {
  if (g_slow_name.empty())
    return;
  g_mark_ns.store(thread_cpu_ns(), std::memory_order_relaxed);
  g_active.store(name == g_slow_name, std::memory_order_relaxed);
}

}  // namespace iov::bench
