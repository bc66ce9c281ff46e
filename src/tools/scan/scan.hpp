// scan.hpp: the engine of iov-scan. A regular file is read with io_uring into
// registered buffers (io_uring_register_buffers + READ_FIXED), and each read
// is imported from iov's buffer_table as an ITER_BVEC iterator (import_fixed)
// through which its CRC32C and its zero blocks are computed. Holes that
// SEEK_DATA/SEEK_HOLE report are never read: they extend the CRC in O(log n)
// and count as zero.
//
//   auto scanner = iov::tools::file_scanner::create({.block = 4096});
//   absl::StatusOr<iov::tools::scan_result> r = (*scanner)->scan("disk.img");
//   printf("crc32c: %08x\n", r->crc32c);
//
// Only regular files are scanned; anything else (a device, a FIFO, a socket,
// a directory) is refused before it is read, and a file whose length is not
// its size (/proc, /sys, or one that changes while read) is an error, never a
// wrong CRC. The buffers are sized from the file (at most buffer_size each),
// not from the block, and shrink to what RLIMIT_MEMLOCK lets io_uring pin.
#pragma once

#include <liburing.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iov/registered_buffers.hpp"

namespace iov::tools {

// The largest zero-detection block: a block is only a granularity, read in
// buffer-sized pieces, but one of more than 1 GiB says nothing useful.
inline constexpr uint64_t kMaxScanBlock = uint64_t{1} << 30;

struct scan_options {
  uint64_t block = 4096;              // zero-detection granularity, 1 byte to kMaxScanBlock
  unsigned nr_buffers = 4;            // reads in flight
  uint64_t buffer_size = 1U << 20;    // the most each buffer holds (rounded up to pages)
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
  // The size of each registered buffer now (0 before the first read).
  uint64_t registered_buffer_size() const { return buffer_size_; }

 private:
  file_scanner(const scan_options& opts);
  struct state;
  absl::Status reserve_buffers(uint64_t file_size);
  void release_buffers();
  absl::Status read_range(int fd, uint64_t start, uint64_t end, state& st);
  void consume(unsigned buf, uint64_t offset, uint64_t len, state& st);

  scan_options opts_;
  io_uring ring_{};
  bool ring_ready_ = false;
  uint64_t buffer_size_ = 0;  // of each of buffers_, registered with the ring and in table_
  std::vector<char*> buffers_;
  iov::buffer_table table_;
};

}  // namespace iov::tools
