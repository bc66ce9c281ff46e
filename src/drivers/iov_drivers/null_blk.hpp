// null_blk.hpp: the kernel's null block device (drivers/block/null_blk/main.c
// and zoned.c) in user space: by default it completes every request without
// touching data; memory_backed stores written blocks, optionally behind a
// write-back cache, and zoned adds host-managed zones with write pointers.
//
//   auto dev = iov::nullb_device::create({.size = 64 << 20, .blocksize = 4096,
//                                         .memory_backed = true, .cache_size = 1});
//   iov::blk_request rq{.op = iov::REQ_OP_WRITE, .flags = iov::REQ_FUA, .sector = 8, .iter = &it};
//   int err = (*dev)->submit(rq);
//
// Memory backing, as the kernel's: each stored page carries a bitmap with one
// bit per block (struct nullb_page); a block reads as data only when its bit
// is set, and as zeros otherwise. With cache_size (MiB) writes land in cache
// pages until the cache is full, then null_make_cache_space flushes pages to
// the data tree (only their set blocks); REQ_FUA writes the data tree directly
// (with fua=0 it is a write and a flush, as the block layer turns it), FLUSH
// empties the cache. DISCARD (discard=1, not zoned) clears blocks in both.
// WRITE_ZEROES (not zoned; the kernel's null_blk has none) unstores the
// blocks as DISCARD does, or with REQ_NOUNMAP writes zeros that stay stored.
// Without memory backing, lend_pages lends zeros (a READ moves no data).
//
// Zoned (zone_size MiB, a power of two; zone_nr_conv conventional zones
// first): writes to a sequential zone must start at its write pointer, zone
// append writes there and returns the sector in rq.sector, reads past the
// write pointer return 0xFF bytes (null_fill_pattern), and ZONE_OPEN / CLOSE /
// FINISH / RESET / RESET_ALL follow zoned.c, zone_max_open and
// zone_max_active included. A write that crosses into another zone is refused
// unless every zone it touches is conventional (the block layer would have
// split it at chunk_sectors).
//
// Concurrency: one lock per device for the stored pages (the kernel's
// nullb->lock), dropped while a page is allocated, and one for the zone
// states, taken first.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "iov_drivers/blkdev.hpp"

namespace iov {

namespace drivers::internal {
struct nullb;
}

struct null_blk_config {
  uint64_t size = uint64_t{64} << 20;  // bytes, a multiple of blocksize (the kernel's `size` is MiB)
  unsigned blocksize = 512;            // 512 .. 4096, a power of two
  bool memory_backed = false;
  unsigned long cache_size = 0;  // MiB; 0: no write-back cache
  bool fua = true;               // with a cache: REQ_FUA bypasses it
  bool discard = false;          // accept DISCARD (memory backed, not zoned)
  bool zoned = false;
  unsigned long zone_size = 256;    // MiB, a power of two
  unsigned long zone_capacity = 0;  // MiB, <= zone_size; 0: zone_size
  unsigned zone_nr_conv = 0;
  unsigned zone_max_open = 0;    // 0: no limit
  unsigned zone_max_active = 0;  // 0: no limit
  uint64_t max_pages = 0;  // a budget of pages (data and cache): a write that would need
                           // more fails with -ENOSPC and changes nothing; 0: no limit
  ::iov::copy_mode copy_mode = ::iov::copy_mode::modern;  // the initial blkdev settings
  ::iov::iteration_mode iteration = ::iov::iteration_mode::inlined;
};

class nullb_device final : public blkdev {
 public:
  static absl::StatusOr<std::unique_ptr<nullb_device>> create(const null_blk_config& config);
  ~nullb_device() override;  // no request may be in flight

  int submit(blk_request& rq) override;
  const char* name() const override { return "null_blk"; }
  uint64_t nr_pages() const override;
  int report_zones(sector_t sector, unsigned nr_zones, std::vector<blk_zone>* out) override;

  // The configuration after null_validate_conf's adjustments (cache_size 0
  // without memory backing, discard off when zoned, zone limits clamped).
  const null_blk_config& config() const;
  uint64_t cache_bytes() const;  // the kernel's curr_cache
  unsigned nr_zones() const;

 protected:
  int do_crc32c(sector_t sector, sector_t nr_sectors, uint32_t* crc, const char** why) override;
  int do_map_extents(sector_t sector, sector_t nr_sectors, std::vector<blk_extent>* out,
                     const char** why, unsigned how) override;
  int do_lend_pages(sector_t sector, sector_t nr_sectors, std::vector<bio_vec>* out, const char** why) override;

 private:
  nullb_device(std::unique_ptr<drivers::internal::nullb> nullb, sector_t capacity, const queue_limits& limits);
  std::unique_ptr<drivers::internal::nullb> nullb_;
};

}  // namespace iov
