// iov-fio: fio-style workloads on an in-process brd or null_blk device, with
// the options, defaults and output fio users expect (see job.hpp). On a
// terminal it shows fio's live status line while it runs (status.hpp).
#include <unistd.h>

#include <cstdio>
#include <new>
#include <optional>

#include "common/version.hpp"
#include "fio/job.hpp"
#include "fio/report.hpp"
#include "fio/status.hpp"

namespace {

constexpr char kUsage[] =
    "usage: iov-fio [--driver=brd|null_blk] [--size=64m] [--rw=read|write|randread|randwrite|randrw]\n"
    "               [--bs=4k] [--numjobs=1] [--iodepth=1] [--iodepth_batch_submit=1]\n"
    "               [--runtime=SECONDS | --io_size=BYTES]\n"
    "               [--rwmixread=50] [--verify=crc32c] [--iter=ubuf|iovec|bvec|fixed]\n"
    "               [--output-format=normal|json] [--prefill] [--progress] [--randseed=N]\n"
    "               [--ioengine=blkdev|memcpy] [--]\n"
    "  driver settings: --blocksize=512 --memory_backed=0|1 --cache_size=MB --zoned --zone_size=MB\n"
    "                   --zone_nr_conv=N --detect_zeroes=off|on|unmap --copy_mode=modern|legacy|nocache\n"
    "                   --iteration=inline|outofline --max_pages=N\n"
    "  limits: --numjobs 1 to 1024, --iodepth 1 to 65536 (their buffers within this machine's memory;\n"
    "          --iodepth_batch_submit at most --iodepth: requests handed to the driver at once;\n"
    "          with --iter=fixed, numjobs x iodepth at most 16384), --size and --io_size below 2^63,\n"
    "          --runtime at most 1e9 seconds, --bs a multiple of 512 up to 64m\n"
    "          --prefill of a memory-keeping device at most the memory available (MemAvailable)\n"
    "  --ioengine=memcpy  no driver: each request a memcpy to or from a mapping of --size on huge\n"
    "          pages, written whole first; the limit a driver's requests are measured against\n"
    "  --help, --version  this text; the program's version and commit\n"
    "  --       ends the options (iov-fio takes no other argument)\n"
    "On a terminal, fio's status line (jobs, progress, bandwidth, IOPS, ETA) is shown while it runs;\n"
    "otherwise the prefill's progress is shown on stderr if that is a terminal, or with --progress.\n"
    "Exit status: 0 done; 1 a request or the verify failed (naming the offset), or memory or a\n"
    "thread could not be had; 2 a bad command line, or settings the device cannot honour.\n";

int fail(const std::string& text, int status) {
  std::fprintf(stderr, "iov-fio: %s\n", text.c_str());
  return status;
}

int run_fio(int argc, char** argv) {
  auto opts = iov::fio::parse_options(argc, argv);
  if (!opts.ok())
    return fail(std::string(opts.status().message()), 2);
  auto dev = iov::blkdev_create(opts->driver, opts->settings);
  if (!dev.ok())
    return fail(std::string(dev.status().message()), 2);
  if (absl::Status s = iov::fio::check_device(*opts, **dev); !s.ok())
    return fail(std::string(s.message()), 2);
  std::vector<iov::fio::job_progress> progress(opts->numjobs);
  iov::fio::run_result r;
  std::optional<iov::fio::status_line> status;
  if (!opts->json && isatty(STDOUT_FILENO))  // fio's --eta=auto
    status.emplace(*opts, progress, stdout);
  else if (opts->prefill && (opts->progress || isatty(STDERR_FILENO)))
    status.emplace(*opts, progress, stderr, /*prefill_only=*/true);
  r = iov::fio::run(*opts, **dev, &progress);
  status.reset();
  if (r.setup_failed)
    return fail(r.error_text, 1);
  if (opts->json)
    iov::fio::print_json(*opts, r, stdout);
  else
    iov::fio::print_normal(*opts, r, stdout);
  std::fflush(stdout);
  if (r.error)
    fail(r.error_text, 1);
  if (r.verify_failed)
    fail(r.verify_text, 1);
  return r.error || r.verify_failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int a = 1; a < argc && std::string(argv[a]) != "--"; a++) {
    if (std::string(argv[a]) == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (std::string(argv[a]) == "--version")
      return iov::tools::print_version("iov-fio"), 0;
  }
  try {
    return run_fio(argc, argv);
  } catch (const std::bad_alloc&) {  // the last resort: every large allocation is checked before
    return fail("out of memory", 1);
  }
}
