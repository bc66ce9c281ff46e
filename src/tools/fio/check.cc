// check.cc: what the options ask of the device that it cannot do, refused
// before any job runs (see job.hpp).
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "fio/job.hpp"
#include "iov_drivers/null_blk.hpp"

namespace iov::fio {

uint64_t available_memory() {
  if (FILE* f = std::fopen("/proc/meminfo", "re")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(f);
    if (found)
      return static_cast<uint64_t>(kib) * 1024;
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}

absl::Status check_device(const job_options& o, const blkdev& dev) {
  const auto* nullb = dynamic_cast<const nullb_device*>(&dev);
  const bool stores = !nullb || nullb->config().memory_backed;  // brd always keeps what is written
  if (o.verify && !stores)
    return absl::InvalidArgumentError(
        "--verify=crc32c reads back what was written, but null_blk with --memory_backed=0 stores nothing");
  if (const uint64_t zone = dev.limits().chunk_sectors << SECTOR_SHIFT; (dev.limits().features & BLK_FEAT_ZONED) && zone) {
    if (o.size / o.numjobs < zone)
      return absl::InvalidArgumentError(absl::StrCat("--numjobs=", o.numjobs, " leaves each job ", o.size / o.numjobs,
                                                     " bytes, less than one zone (", zone,
                                                     " bytes): on a zoned device each job writes whole zones"));
  }
  // A prefill writes every block, and the device keeps each in a page of its
  // own: beyond the memory the machine has free it would swap, or run out,
  // long after it started.
  const uint64_t avail = available_memory();
  if (o.prefill && stores && o.size > avail)
    return absl::InvalidArgumentError(absl::StrCat(
        "--prefill writes the whole device, --size=", o.size, " bytes, which ", o.driver,
        " keeps in memory: more than this machine has available (MemAvailable: ", avail, " bytes)"));
  if (o.engine == ioengine::memcpy && o.size > avail)
    return absl::InvalidArgumentError(absl::StrCat("--ioengine=memcpy copies out of a mapping of --size=", o.size,
                                                   " bytes, written whole: more than this machine has available "
                                                   "(MemAvailable: ", avail, " bytes)"));
  return absl::OkStatus();
}

}  // namespace iov::fio
