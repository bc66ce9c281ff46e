// status.hpp: fio's live status line, for iov-fio on a terminal. Every
// second, rewritten in place (a carriage return, padded over the previous
// line), as fio prints it:
//
//   Jobs: 1 (f=1): [r(1)][45.0%][r=1234MiB/s][r=316k IOPS][eta 00m:05s]
//
// jobs running and the device open by each, each job's state as fio's run
// letters (R/r sequential/random reads, W/w writes, m mixed, I prefilling,
// V verifying, P not started, E done and waiting for the verify, _ done, X
// failed) condensed into runs, the percentage done, the bandwidth and IOPS of
// the last second per direction, and the time left. Nothing is printed unless asked (main() asks only when
// stdout is a terminal and the output is not JSON, as fio's --eta=auto; or,
// for the prefill alone, on stderr when that is a terminal or --progress).
//
//   std::vector<iov::fio::job_progress> progress(numjobs);
//   iov::fio::status_line status(opts, progress, stdout);   // starts its thread
//   ... the jobs update progress[k] ...
//   status.stop();                                           // a newline after the last line
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fio/job.hpp"

namespace iov::fio {

// CLOCK_MONOTONIC in nanoseconds: the clock of the progress timestamps
// (latencies use clock.hpp's).
uint64_t monotonic_ns();

// What one job has done so far, written by the job alone (relaxed stores)
// and read by the status line.
struct job_progress {
  std::atomic<char> state{'P'};           // fio's run letter
  std::atomic<uint64_t> ios[2] = {};      // [0] reads, [1] writes, every phase
  std::atomic<uint64_t> bytes[2] = {};
  std::atomic<uint64_t> phase_done{0};    // bytes of the current phase
  std::atomic<uint64_t> phase_total{0};   // 0: unknown (time-based)
  std::atomic<uint64_t> phase_start_ns{0};

  // The job's own counters: only the job writes them, so no read-modify-write.
  void count(bool is_write, uint64_t len) {
    auto bump = [](std::atomic<uint64_t>& a, uint64_t by) {
      a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
    };
    bump(ios[is_write], 1);
    bump(bytes[is_write], len);
    bump(phase_done, len);
  }
  void start_phase(char letter, uint64_t total, uint64_t now_ns) {
    phase_done.store(0, std::memory_order_relaxed);
    phase_total.store(total, std::memory_order_relaxed);
    phase_start_ns.store(now_ns, std::memory_order_relaxed);
    state.store(letter, std::memory_order_relaxed);
  }
};

// The run letter of a job in its measured phase (fio's check_str_update).
char run_letter(rw_pattern rw);

// fio's num2str(): at most maxlen digits (a decimal point counted) with an SI
// (k, M, G: powers of 1000) or IEC (Ki, Mi, Gi: 1024) prefix and a unit;
// `base` says what one unit of num is worth (1024: num counts KiB).
std::string num2str(uint64_t num, int maxlen, uint64_t base, bool pow2, const char* unit);

// One status line's content, computed from the jobs' progress.
struct status_snapshot {
  unsigned running = 0;
  std::string run_str;               // one letter per job, uncondensed
  double elapsed_s = 0;              // since the run started
  double eta_s = -1;                 // -1: unknown
  uint64_t rate[2] = {}, iops[2] = {};  // bytes/s and IO/s over the last interval
};
// "Jobs: N (f=N): [...][...%][r=...][r=... IOPS][eta ...]", without the
// carriage return and padding.
std::string format_status(const status_snapshot& s);

class status_line {
 public:
  // prefill_only: the line ends (with a newline) once no job is prefilling
  // or waiting to start, for the prefill's progress on stderr.
  status_line(const job_options& o, const std::vector<job_progress>& jobs, FILE* out, bool prefill_only = false);
  ~status_line();
  status_line(const status_line&) = delete;
  status_line& operator=(const status_line&) = delete;
  // Prints the last line and a newline (if it printed any), and joins the thread.
  void stop();

 private:
  status_snapshot snapshot(uint64_t now_ns, double interval_s);
  void print(const status_snapshot& s);
  void loop();

  const job_options& o_;
  const std::vector<job_progress>& jobs_;
  FILE* out_;
  bool prefill_only_;
  uint64_t start_ns_;
  uint64_t last_bytes_[2] = {}, last_ios_[2] = {};
  size_t last_len_ = 0;
  bool printed_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace iov::fio
