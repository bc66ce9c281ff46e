// device.cc: setting up a null_blk device (the kernel's null_validate_conf
// and null_add_dev) and its CRC and extent-map services.
//
//   auto dev = iov::nullb_device::create({.memory_backed = true, .zoned = true, .zone_size = 4});
//   uint32_t crc = ~0u;
//   (*dev)->crc32c(0, (*dev)->get_capacity(), &crc);   // unstored blocks are never read
#include <algorithm>
#include <cerrno>
#include <climits>

#include "absl/strings/str_cat.h"
#include "iov/highmem.hpp"
#include "iov/zero_scan.hpp"
#include "iov_drivers/internal/null_blk.hpp"
#include "iov_drivers/internal/services.hpp"

namespace iov {

using namespace drivers::internal;

namespace {

bool is_power_of_2(uint64_t n) { return n && !(n & (n - 1)); }

queue_limits null_limits(const nullb* nb) {
  queue_limits lim;
  lim.logical_block_size = lim.physical_block_size = nb->dev.blocksize;
  if (nb->dev.discard) {
    lim.max_hw_discard_sectors = UINT_MAX >> SECTOR_SHIFT;
    lim.discard_granularity = nb->dev.blocksize;
  }
  if (nb->dev.cache_size > 0) {
    lim.features |= BLK_FEAT_WRITE_CACHE;
    if (nb->dev.fua) lim.features |= BLK_FEAT_FUA;
  }
  if (nb->dev.zoned) {
    lim.features |= BLK_FEAT_ZONED;
    lim.chunk_sectors = nb->zone_size_sects;
  } else {
    lim.max_write_zeroes_sectors = UINT_MAX >> SECTOR_SHIFT;
  }
  return lim;
}

// Walks the blocks of a range under the device's locks, telling f whether
// each lies past its zone's write pointer and which page holds it, if any.
template <class F>
void for_each_block(nullb* nb, sector_t sector, sector_t nr_sectors, F&& f) {
  std::unique_lock zone_guard(nb->zone_lock, std::defer_lock);
  if (nb->dev.zoned) zone_guard.lock();
  std::lock_guard guard(nb->lock);
  const sector_t step = nb->dev.blocksize >> SECTOR_SHIFT;
  const bool ignore_cache = !null_cache_active(nb);
  for (sector_t s = sector; s < sector + nr_sectors; s += step) {
    if (nb->dev.zoned && null_zone_beyond_wp(nb, s)) {
      f(s, true, nullptr);
      continue;
    }
    f(s, false, null_lookup_page(nb, s, false, ignore_cache));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<nullb_device>> nullb_device::create(const null_blk_config& config) {
  auto nb = std::make_unique<nullb>();
  nb->dev = config;
  null_blk_config& dev = nb->dev;
  if (dev.blocksize < SECTOR_SIZE || dev.blocksize > PAGE_SIZE || !is_power_of_2(dev.blocksize))
    return absl::InvalidArgumentError(
        absl::StrCat("null_blk: blocksize must be a power of two from 512 to 4096, not ", dev.blocksize));
  if (dev.size == 0 || dev.size % dev.blocksize)
    return absl::InvalidArgumentError(
        absl::StrCat("null_blk: size must be a positive multiple of the blocksize (", dev.blocksize, ")"));
  if (!dev.memory_backed) dev.cache_size = 0;  // a cache of nothing is meaningless
  dev.cache_size = std::min<unsigned long>(ULONG_MAX / 1024 / 1024, dev.cache_size);
  if (!dev.memory_backed || dev.zoned) dev.discard = false;  // null_config_discard
  nb->capacity = dev.size >> SECTOR_SHIFT;
  if (dev.zoned) {
    const char* why = nullptr;
    if (null_init_zoned_dev(nb.get(), &why)) return absl::InvalidArgumentError(why);
  }
  const sector_t capacity = nb->capacity;
  const queue_limits lim = null_limits(nb.get());
  return std::unique_ptr<nullb_device>(new nullb_device(std::move(nb), capacity, lim));
}

nullb_device::nullb_device(std::unique_ptr<drivers::internal::nullb> nb, sector_t capacity, const queue_limits& limits)
    : blkdev(capacity, limits), nullb_(std::move(nb)) {
  nullb_->owner = this;
  set_copy_mode(nullb_->dev.copy_mode);
  set_iteration(nullb_->dev.iteration);
}

nullb_device::~nullb_device() {
  null_free_device_storage(nullb_.get(), true);
  null_free_device_storage(nullb_.get(), false);
}

uint64_t nullb_device::nr_pages() const { return nullb_->nr_pages.load(std::memory_order_relaxed); }
const null_blk_config& nullb_device::config() const { return nullb_->dev; }
unsigned nullb_device::nr_zones() const { return nullb_->nr_zones; }

uint64_t nullb_device::cache_bytes() const {
  std::lock_guard guard(nullb_->lock);
  return nullb_->curr_cache;
}

int nullb_device::do_crc32c(sector_t sector, sector_t nr_sectors, uint32_t* crc, const char** why) {
  nullb* nb = nullb_.get();
  if (!nb->dev.memory_backed) {
    *why = "null_blk: not memory backed: there is no data";
    return -EOPNOTSUPP;
  }
  const unsigned bs = nb->dev.blocksize;
  crc_builder b(*crc);
  for_each_block(nb, sector, nr_sectors, [&](sector_t s, bool beyond_wp, const nullb_page* t_page) {
    if (!t_page) {
      b.fill(beyond_wp ? 0xff : 0, bs);
      return;
    }
    const char* kaddr = static_cast<const char*>(kmap_local_page(t_page->page));
    b.data(kaddr + offset_in_page(s << SECTOR_SHIFT), bs);
    kunmap_local(kaddr);
  });
  *crc = b.finish();
  return 0;
}

// Without memory backing a READ transfers nothing: lend zeros, so that a
// server never sends what its own buffer held before.
int nullb_device::do_lend_pages(sector_t, sector_t nr_sectors, std::vector<bio_vec>* out, const char** why) {
  if (nullb_->dev.memory_backed) {
    *why = "null_blk: its pages are not lent (they are freed without a grace period)";
    return -EOPNOTSUPP;
  }
  lend_zeroes(nr_sectors << SECTOR_SHIFT, out);
  return 0;
}

int nullb_device::do_map_extents(sector_t sector, sector_t nr_sectors, std::vector<blk_extent>* out,
                                 const char** why, unsigned how) {
  nullb* nb = nullb_.get();
  if (!nb->dev.memory_backed) {
    *why = "null_blk: not memory backed: there is no data";
    return -EOPNOTSUPP;
  }
  const unsigned bs = nb->dev.blocksize;
  const sector_t step = bs >> SECTOR_SHIFT;
  extent_builder map(out);
  for_each_block(nb, sector, nr_sectors, [&](sector_t s, bool beyond_wp, const nullb_page* t_page) {
    if (!t_page) {
      map.add(s, step, beyond_wp ? BLK_EXTENT_HOLE : BLK_EXTENT_HOLE | BLK_EXTENT_ZERO);
      return;
    }
    if (how & BLK_MAP_ALLOCATION) {
      map.add(s, step, 0);
      return;
    }
    const char* kaddr = static_cast<const char*>(kmap_local_page(t_page->page));
    map.add(s, step, mem_is_zero(kaddr + offset_in_page(s << SECTOR_SHIFT), bs) ? BLK_EXTENT_ZERO : 0);
    kunmap_local(kaddr);
  });
  return 0;
}

}  // namespace iov
