// services.hpp: what the drivers' CRC and extent-map services share: an
// extent list that merges as it grows, and the CRC of a run of one repeated
// byte computed without reading anything.
//
//   internal::extent_builder map(out);
//   map.add(sector, 8, BLK_EXTENT_HOLE | BLK_EXTENT_ZERO);   // merged with a hole just before
//   *crc = internal::crc32c_extend_fill(*crc, 0xff, bytes);  // O(log^2 n), reads nothing
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "iov/crc32c.hpp"
#include "iov/page.hpp"
#include "iov_drivers/blkdev.hpp"

namespace iov::drivers::internal {

// Checks `bytes` at `sector` against a device of `capacity` sectors and
// logical block size `lbs`: 0, or -EINVAL (misaligned) / -EIO (beyond the end,
// the kernel's bio_check_eod) with *why set.
inline int blk_check_range(sector_t sector, uint64_t bytes, sector_t capacity, unsigned lbs, const char** why) {
  const sector_t lbs_sectors = lbs >> SECTOR_SHIFT;
  if (bytes % lbs) {
    *why = lbs == SECTOR_SIZE ? "length is not a multiple of 512 bytes"
                              : "length is not a multiple of the logical block size";
    return -EINVAL;
  }
  if (sector % lbs_sectors) {
    *why = "sector is not aligned to the logical block size";
    return -EINVAL;
  }
  const sector_t nr = bytes >> SECTOR_SHIFT;
  if (sector > capacity || nr > capacity - sector) {
    *why = "attempt to access beyond end of device";
    return -EIO;
  }
  return 0;
}

// As blk_check_range, for a length in sectors (which may be any 64-bit value).
inline int blk_check_sectors(sector_t sector, sector_t nr_sectors, sector_t capacity, unsigned lbs,
                             const char** why) {
  if (nr_sectors > capacity) {
    *why = "attempt to access beyond end of device";
    return -EIO;
  }
  return blk_check_range(sector, nr_sectors << SECTOR_SHIFT, capacity, lbs, why);
}

// The checks of a READ, WRITE or ZONE_APPEND: an iterator of the right
// direction, and its count as the range.
inline int blk_check_data(const blk_request& rq, sector_t capacity, unsigned lbs, const char** why) {
  if (!rq.iter) {
    *why = "data request without an iterator";
    return -EINVAL;
  }
  if (op_is_write(rq.op) != (iov_iter_rw(rq.iter) == ITER_SOURCE)) {
    *why = op_is_write(rq.op) ? "write from an ITER_DEST iterator" : "read into an ITER_SOURCE iterator";
    return -EINVAL;
  }
  return blk_check_range(rq.sector, iov_iter_count(rq.iter), capacity, lbs, why);
}

// Appends extents to *out, merging a run with the one before it when both
// have the same flags and touch (extents already in *out are left alone).
class extent_builder {
 public:
  explicit extent_builder(std::vector<blk_extent>* out) : out_(out), first_(out->size()) {}
  void add(sector_t sector, sector_t nr_sectors, unsigned flags) {
    if (!nr_sectors) return;
    if (out_->size() > first_) {
      blk_extent& last = out_->back();
      if (last.flags == flags && last.sector + last.nr_sectors == sector) {
        last.nr_sectors += nr_sectors;
        return;
      }
    }
    out_->push_back({sector, nr_sectors, flags});
  }

 private:
  std::vector<blk_extent>* out_;
  size_t first_;
};

// One shared page of zeros that nothing writes (the kernel's ZERO_PAGE(0)).
page* zero_page();
// Appends pieces of zero_page() covering `bytes`: what a device lends for
// what it does not store.
void lend_zeroes(uint64_t bytes, std::vector<bio_vec>* out);

// crc32c(crc, n bytes of value c): zeros through crc32c_extend_zeroes, any
// other byte by doubling with crc32c_combine. Never reads device memory.
uint32_t crc32c_extend_fill(uint32_t crc, unsigned char c, uint64_t n);

// Accumulates the CRC of a sequence of stored pieces and unstored runs,
// extending over each unstored run in one call however many blocks it spans.
// The stored pieces feed one crc32c_state, so a device of 512-byte blocks
// costs what one flat buffer does, with one reduction at the end; a run of
// zeroes advances the state without reading anything.
class crc_builder {
 public:
  explicit crc_builder(uint32_t crc) { crc32c_init(&state_, crc); }
  void data(const void* p, size_t len);
  void fill(unsigned char c, uint64_t len) {
    if (len && pending_len_ && pending_byte_ != c) flush();
    pending_byte_ = c;
    pending_len_ += len;
  }
  uint32_t finish() {
    flush();
    return crc32c_final(&state_);
  }

 private:
  void flush();
  crc32c_state state_;
  unsigned char pending_byte_ = 0;
  uint64_t pending_len_ = 0;
};

}  // namespace iov::drivers::internal
