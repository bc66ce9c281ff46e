// job.hpp: what an iov-fio run is asked to do (its command line, parsed), and
// what it measured. The option names, defaults and output are fio's, pinned
// in the API contract; the driver's own settings pass through to
// iov::blkdev_create(), which refuses one the driver does not have.
//
//   absl::StatusOr<iov::fio::job_options> o = iov::fio::parse_options(argc, argv);
//   iov::fio::run_result r = iov::fio::run(*o, *device);
//   iov::fio::print_normal(*o, r, stdout);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fio/histogram.hpp"
#include "iov_drivers/blkdev.hpp"

namespace iov::fio {

// What the options may ask for, checked before anything is allocated.
inline constexpr unsigned kMaxJobs = 1024;              // one thread each
inline constexpr unsigned kMaxIodepth = 65536;          // buffers per job
inline constexpr uint64_t kMaxBytes = uint64_t{1} << 63;  // --size, --io_size: below what loff_t holds
inline constexpr double kMaxRuntime = 1e9;              // seconds; its nanoseconds fit in 64 bits

enum class rw_pattern { read, write, randread, randwrite, randrw };
enum class iter_kind { ubuf, iovec, bvec, fixed };
// --ioengine: blkdev (the default) submits each request to the driver;
// memcpy is the limit the driver is measured against: each request a plain
// memcpy between its buffer and an anonymous mapping of --size on
// transparent huge pages, written whole first, through the same loop
// (offsets, clock, histogram) with no driver; a batch's windows are
// prefetched first, as submit_batch does for brd (workload.cc's memcpy_io).
enum class ioengine { blkdev, memcpy };

struct job_options {
  std::string driver = "brd";
  uint64_t size = 64ull << 20;
  rw_pattern rw = rw_pattern::read;
  uint64_t bs = 4096;
  unsigned numjobs = 1;
  unsigned iodepth = 1;
  unsigned iodepth_batch = 1;  // --iodepth_batch_submit (or fio's alias --iodepth_batch): requests
                               // handed to the driver at once (blkdev::submit_batch), at most iodepth
  double runtime = 0;       // seconds; 0: run io_size bytes
  uint64_t io_size = 0;     // bytes per job; 0: size
  unsigned rwmixread = 50;  // randrw: percent of reads
  bool verify = false;      // --verify=crc32c
  iter_kind iter = iter_kind::ubuf;
  ioengine engine = ioengine::blkdev;
  bool json = false;
  bool prefill = false;
  bool progress = false;       // --progress: the prefill's progress on stderr even when it is not a terminal
  uint64_t seed = 0x1234;
  int64_t debug_corrupt = -1;  // testing aid: corrupt this byte offset after writing, before verifying
  blkdev_settings settings;    // for blkdev_create(), which has the programs' defaults
};

// The command line, every value checked for range and overflow (the
// buffers it asks for against this machine's memory): InvalidArgument naming
// the option.
absl::StatusOr<job_options> parse_options(int argc, char** argv);
const char* rw_name(rw_pattern rw);
const char* iter_name(iter_kind k);
const char* ioengine_name(ioengine e);

struct direction_stats {
  uint64_t ios = 0;
  uint64_t bytes = 0;
  latency_histogram clat;
};

struct run_result {
  direction_stats read, write;
  double seconds = 0;         // wall time of the measured phase
  double usr_cpu = 0, sys_cpu = 0;  // percent of the wall time, as fio prints
  uint64_t ctx = 0;           // context switches
  int error = 0;              // first request error (-errno), 0 if none
  std::string error_text;
  bool setup_failed = false;  // no job ran: buffers or threads could not be had (error_text says)
  bool verify_failed = false;
  std::string verify_text;    // names the offset
  uint64_t verified_blocks = 0;
};

// What the options ask of the device it cannot do: --verify on a null_blk
// that stores nothing, jobs smaller than a zone, a --prefill of a device that
// keeps more than available_memory(). InvalidArgument, with the numbers.
absl::Status check_device(const job_options& o, const blkdev& dev);

// MemAvailable from /proc/meminfo, in bytes: what can be had without
// swapping (the free pages where /proc is not mounted).
uint64_t available_memory();

struct job_progress;  // status.hpp

// Runs the workload (prefill first if asked; verify after, if asked). With
// `progress` (numjobs entries), each job reports there as it goes.
run_result run(const job_options& o, blkdev& dev, std::vector<job_progress>* progress = nullptr);

}  // namespace iov::fio
