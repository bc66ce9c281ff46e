// null_blk.hpp (internal): the state of a null_blk device and the functions
// its two halves share, named as in the kernel's null_blk.h:
// null_blk/main.cc (storage, cache, request path) and null_blk/zoned.cc.
//
//   std::unique_lock lk(nb->lock);
//   nullb_page* t = null_lookup_page(nb, sector, /*for_write=*/false, !null_cache_active(nb));
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "iov/page.hpp"
#include "iov/xarray.hpp"
#include "iov_drivers/blkdev.hpp"
#include "iov_drivers/null_blk.hpp"

namespace iov::drivers::internal {

inline constexpr unsigned PAGE_SECTORS_SHIFT = PAGE_SHIFT - SECTOR_SHIFT;
inline constexpr sector_t PAGE_SECTORS = sector_t{1} << PAGE_SECTORS_SHIFT;
inline constexpr sector_t SECTOR_MASK = PAGE_SECTORS - 1;

// struct nullb_page: a page and one bit per sector (set on the first sector of
// each block written); the two high bits mark a cache page being flushed
// (LOCK) and one freed meanwhile, to be freed by the flusher (FREE).
inline constexpr unsigned MAP_SZ = PAGE_SECTORS + 2;
inline constexpr unsigned NULLB_PAGE_LOCK = MAP_SZ - 1;
inline constexpr unsigned NULLB_PAGE_FREE = MAP_SZ - 2;
struct nullb_page {
  ::iov::page* page;
  unsigned long index;   // the kernel keeps it in page->private
  unsigned long bitmap;  // MAP_SZ bits, changed under nullb::lock only
};
inline bool test_bit(unsigned nr, const unsigned long* map) { return *map >> nr & 1; }
inline void set_bit(unsigned nr, unsigned long* map) { *map |= 1ul << nr; }
inline void clear_bit(unsigned nr, unsigned long* map) { *map &= ~(1ul << nr); }

struct nullb_zone {
  sector_t start;
  sector_t len;
  sector_t capacity;
  sector_t wp;
  blk_zone_type type;
  blk_zone_cond cond;
};

// The kernel's struct nullb and the storage of struct nullb_device.
struct nullb {
  null_blk_config dev;
  sector_t capacity = 0;        // sectors
  const blkdev* owner = nullptr;  // for its copy settings

  std::mutex lock;  // nullb->lock: the trees, the bitmaps, curr_cache
  xarray data;      // dev->data: nullb_page*
  xarray cache;     // dev->cache: nullb_page*
  uint64_t curr_cache = 0;
  unsigned long cache_flush_pos = 0;
  std::atomic<uint64_t> nr_pages{0};  // nullb_pages allocated and not yet freed

  // Zones (zoned.cc). zone_lock stands for the kernel's per-zone locks and its
  // zone_res_lock together; it is taken before `lock`.
  std::mutex zone_lock;
  std::vector<nullb_zone> zones;
  sector_t zone_size_sects = 0;
  unsigned zone_size_shift = 0;
  unsigned nr_zones = 0;
  unsigned nr_zones_imp_open = 0;
  unsigned nr_zones_exp_open = 0;
  unsigned nr_zones_closed = 0;
  unsigned imp_close_zone_no = 0;
};

inline bool null_cache_active(const nullb* nb) { return nb->dev.cache_size > 0; }
inline unsigned null_zone_no(const nullb* nb, sector_t sect) {
  return static_cast<unsigned>(sect >> nb->zone_size_shift);
}

// pages.cc: the stored pages and the cache; `lk` holds nb->lock and is
// dropped while a page is allocated, as the kernel drops its spinlock.
bool null_page_empty(const nullb_page* t_page);
nullb_page* null_lookup_page(nullb* nb, sector_t sector, bool for_write, bool ignore_cache);
nullb_page* null_insert_page(nullb* nb, std::unique_lock<std::mutex>& lk, sector_t sector, bool ignore_cache);
void null_free_sector(nullb* nb, sector_t sector, bool is_cache);
int null_make_cache_space(nullb* nb, std::unique_lock<std::mutex>& lk, uint64_t n, copy_mode mode);
int null_handle_flush(nullb* nb, copy_mode mode);
int null_handle_discard(nullb* nb, sector_t sector, sector_t nr_sectors);
// -ENOSPC (with *why) when the pages a write of `bytes` at `sector` would add
// overrun max_pages; 0 otherwise. Takes nb->lock.
int null_check_space(nullb* nb, sector_t sector, uint64_t bytes, bool is_fua, const char** why);
void null_free_device_storage(nullb* nb, bool is_cache);

// main.cc: null_process_cmd for READ and WRITE (rq.iter, at `sector`),
// DISCARD and WRITE_ZEROES.
bool null_req_is_fua(const nullb* nb, const blk_request& rq);  // FUA that reaches the driver
int null_process_cmd(nullb* nb, blk_request& rq, req_op op, sector_t sector, sector_t nr_sectors);

// zoned.cc
int null_init_zoned_dev(nullb* nb, const char** why);
int null_process_zoned_cmd(nullb* nb, blk_request& rq);
// The bytes of a read of len at sector (within one zone) that lie below the
// write pointer; the caller holds zone_lock.
uint64_t null_zone_valid_read_len(nullb* nb, sector_t sector, uint64_t len);
// Is `sector` past the write pointer of its sequential zone? (zone_lock held)
bool null_zone_beyond_wp(nullb* nb, sector_t sector);

}  // namespace iov::drivers::internal
