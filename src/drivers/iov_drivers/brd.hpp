// brd.hpp: the kernel's RAM disk (drivers/block/brd.c) in user space: pages
// in an xarray indexed by sector >> PAGE_SECTORS_SHIFT, allocated on first
// write, looked up without a lock, freed by discard after an RCU grace period.
//
//   auto dev = iov::brd_device::create({.size = 64 << 20, .detect_zeroes = iov::detect_zeroes::unmap});
//   if (!dev.ok()) return dev.status();
//   iov::blk_request rq{.op = iov::REQ_OP_READ, .sector = 0, .iter = &it};
//   int err = (*dev)->submit(rq);       // absent pages read as zeros
//
// Operations: READ, WRITE, DISCARD (whole pages only: the partial pages at the
// ends keep their data, as the kernel's brd_do_discard), WRITE_ZEROES (whole
// pages freed unless REQ_NOUNMAP, the rest cleared), FLUSH (nothing to do);
// FUA and PREFLUSH are accepted and mean nothing, as for the kernel's brd.
//
// Zero detection (QEMU's detect-zeroes, which the kernel's brd lacks) looks at
// each page's part of a write: `on` writes nothing into an absent page for an
// all-zero part, `unmap` also frees a page that an all-zero part covers whole.
//
// Concurrency: lookups are xa_load inside an RCU read-side section held while
// the page is copied; a writer that finds no page allocates one and inserts it
// with xa_cmpxchg, using the winner's page when another writer got there first
// (the kernel's brd_insert_page); discard and unmap erase then free_page_rcu.
// As in the kernel there is no lock on the bytes themselves: a read that
// overlaps a concurrent write of the same bytes may see old and new data
// mixed (and ThreadSanitizer calls it the race it is).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "iov_drivers/blkdev.hpp"

namespace iov {

namespace drivers::internal {
struct brd;
}

enum class detect_zeroes : uint8_t { off, on, unmap };

struct brd_config {
  uint64_t size = uint64_t{64} << 20;  // bytes, a multiple of 512 (the kernel's rd_size is in KiB)
  ::iov::detect_zeroes detect_zeroes = ::iov::detect_zeroes::off;
  uint64_t max_pages = 0;  // a budget of pages: a write that would exceed it fails with
                           // -ENOSPC and changes nothing; 0: no limit
  ::iov::copy_mode copy_mode = ::iov::copy_mode::modern;  // the initial blkdev settings
  ::iov::iteration_mode iteration = ::iov::iteration_mode::inlined;
};

class brd_device final : public blkdev {
 public:
  static absl::StatusOr<std::unique_ptr<brd_device>> create(const brd_config& config);
  ~brd_device() override;  // frees the pages; no request may be in flight

  int submit(blk_request& rq) override;
  const char* name() const override { return "brd"; }
  bool can_replace_pages() const override { return true; }
  void prefetch_lookups(std::span<const sector_t> sectors) override;
  uint64_t nr_pages() const override;
  const brd_config& config() const;

  // The kernel's BLKFLSBUF: frees every page. No request may be in flight.
  void free_all_pages();

 protected:
  int do_crc32c(sector_t sector, sector_t nr_sectors, uint32_t* crc, const char** why) override;
  int do_map_extents(sector_t sector, sector_t nr_sectors, std::vector<blk_extent>* out,
                     const char** why, unsigned how) override;
  int do_lend_pages(sector_t sector, sector_t nr_sectors, std::vector<bio_vec>* out, const char** why) override;
  int do_replace_pages(pgoff_t index, page** pages, unsigned nr, const char** why, page** replaced) override;
  void prefetch_requests(std::span<const blk_request> rqs) override;
  void submit_reads(std::span<blk_request> rqs, int* results) override;

 private:
  explicit brd_device(const brd_config& config);
  std::unique_ptr<drivers::internal::brd> brd_;  // the pages and the budget: iov_drivers/internal/brd.hpp
};

}  // namespace iov
