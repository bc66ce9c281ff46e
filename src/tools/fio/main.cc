// iov-fio: fio-style workloads on an in-process brd or null_blk device, with
// the options, defaults and output fio users expect (see job.hpp). Exit
// status: 0, 1 when a request or the verify fails (naming the offset), 2 for
// a bad command line.
#include <cstdio>

#include "fio/job.hpp"
#include "fio/report.hpp"

int main(int argc, char** argv) {
  for (int a = 1; a < argc; a++)
    if (std::string(argv[a]) == "--help") {
      std::printf(
          "usage: iov-fio [--driver=brd|null_blk] [--size=64m] [--rw=read|write|randread|randwrite|randrw]\n"
          "               [--bs=4k] [--numjobs=1] [--iodepth=1] [--runtime=SECONDS | --io_size=BYTES]\n"
          "               [--rwmixread=50] [--verify=crc32c] [--iter=ubuf|iovec|bvec|fixed]\n"
          "               [--output-format=normal|json] [--prefill] [--randseed=N]\n"
          "  driver settings: --blocksize=512 --memory_backed=0|1 --cache_size=MB --zoned --zone_size=MB\n"
          "                   --zone_nr_conv=N --detect_zeroes=off|on|unmap --copy_mode=modern|legacy\n"
          "                   --iteration=inline|outofline --max_pages=N\n");
      return 0;
    }
  auto opts = iov::fio::parse_options(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "iov-fio: %s\n", std::string(opts.status().message()).c_str());
    return 2;
  }
  auto dev = iov::blkdev_create(opts->driver, opts->settings);
  if (!dev.ok()) {
    std::fprintf(stderr, "iov-fio: %s\n", std::string(dev.status().message()).c_str());
    return 2;
  }
  iov::fio::run_result r = iov::fio::run(*opts, **dev);
  if (opts->json)
    iov::fio::print_json(*opts, r, stdout);
  else
    iov::fio::print_normal(*opts, r, stdout);
  if (r.error)
    std::fprintf(stderr, "iov-fio: %s\n", r.error_text.c_str());
  if (r.verify_failed)
    std::fprintf(stderr, "iov-fio: %s\n", r.verify_text.c_str());
  return r.error || r.verify_failed ? 1 : 0;
}
