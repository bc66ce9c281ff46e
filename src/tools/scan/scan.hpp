// scan.hpp: the engine of iov-scan. A file is read with io_uring into
// registered buffers (io_uring_register_buffers + READ_FIXED), and each read
// is imported from iov's buffer_table as an ITER_BVEC iterator (import_fixed)
// through which its CRC32C and its zero blocks are computed. Holes that
// SEEK_DATA/SEEK_HOLE report are never read: they extend the CRC in O(log n)
// and count as zero.
//
//   iov::tools::file_scanner scanner({.block = 4096});
//   absl::StatusOr<iov::tools::scan_result> r = scanner.scan("disk.img");
//   printf("crc32c: %08x\n", r->crc32c);
#pragma once

#include <liburing.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iov/registered_buffers.hpp"

namespace iov::tools {

struct scan_options {
  uint64_t block = 4096;              // zero-detection granularity
  unsigned nr_buffers = 4;            // reads in flight
  uint64_t buffer_size = 1U << 20;    // rounded up to a multiple of block
};

struct extent {
  uint64_t offset;
  uint64_t length;
  bool zero;
  bool operator==(const extent&) const = default;
};

struct scan_result {
  uint64_t size = 0;
  uint32_t crc32c = 0;          // standard CRC-32C: ~crc32c(~0, data)
  std::vector<extent> extents;  // maximal runs, in order, covering the file
  uint64_t bytes_read = 0;      // what went through the registered buffers
};

class file_scanner {
 public:
  static absl::StatusOr<std::unique_ptr<file_scanner>> create(const scan_options& opts);
  ~file_scanner();
  absl::StatusOr<scan_result> scan(const std::string& path);

 private:
  file_scanner(const scan_options& opts);
  struct state;
  absl::Status read_range(int fd, uint64_t start, uint64_t end, state& st);
  void consume(unsigned buf, uint64_t offset, uint64_t len, state& st);

  scan_options opts_;
  io_uring ring_{};
  bool ring_ready_ = false;
  std::vector<char*> buffers_;
  iov::buffer_table table_;
};

}  // namespace iov::tools
