// pages.cc: null_blk's stored pages and write-back cache, after the kernel's
// drivers/block/null_blk/main.c (null_alloc_page .. null_handle_flush).
//
//   std::unique_lock lk(nb->lock);
//   null_make_cache_space(nb, lk, PAGE_SIZE, mode);              // may flush to the data tree
//   nullb_page* t = null_insert_page(nb, lk, sector, /*ignore_cache=*/false);
//
// Everything here runs under nb->lock, which null_insert_page drops while it
// allocates. The cache flush marks the pages it works on with NULLB_PAGE_LOCK
// so that a discard meanwhile only marks them NULLB_PAGE_FREE and leaves the
// freeing to the flusher.
#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

#include "iov/highmem.hpp"
#include "iov_drivers/internal/null_blk.hpp"

namespace iov::drivers::internal {

namespace {

constexpr int FREE_BATCH = 16;

nullb_page* null_alloc_page(nullb* nb) {
  auto* t_page = new (std::nothrow) nullb_page;
  if (!t_page) return nullptr;
  t_page->page = alloc_pages(GFP_NOIO, 0);
  if (!t_page->page) {
    delete t_page;
    return nullptr;
  }
  t_page->index = 0;
  t_page->bitmap = 0;
  nb->nr_pages.fetch_add(1, std::memory_order_relaxed);
  return t_page;
}

void null_free_page(nullb* nb, nullb_page* t_page) {
  set_bit(NULLB_PAGE_FREE, &t_page->bitmap);
  if (test_bit(NULLB_PAGE_LOCK, &t_page->bitmap)) return;  // the flusher frees it
  free_page(t_page->page);
  delete t_page;
  nb->nr_pages.fetch_sub(1, std::memory_order_relaxed);
}

xarray* root_of(nullb* nb, bool is_cache) { return is_cache ? &nb->cache : &nb->data; }

// radix_tree_delete_item: erase index only if it still holds item.
nullb_page* delete_item(xarray* root, unsigned long idx, nullb_page* item) {
  void* cur = xa_cmpxchg(root, idx, item, nullptr);
  return cur == item ? item : nullptr;
}

nullb_page* null_radix_tree_insert(nullb* nb, unsigned long idx, nullb_page* t_page, bool is_cache) {
  xarray* root = root_of(nb, is_cache);
  if (xa_insert(root, idx, t_page) != 0) {  // -EBUSY: a racer's page; -ENOMEM: none
    null_free_page(nb, t_page);
    t_page = static_cast<nullb_page*>(xa_load(root, idx));
  } else if (is_cache) {
    nb->curr_cache += PAGE_SIZE;
  }
  return t_page;
}

nullb_page* lookup_one(nullb* nb, sector_t sector, bool for_write, bool is_cache) {
  unsigned long idx = sector >> PAGE_SECTORS_SHIFT;
  unsigned sector_bit = sector & SECTOR_MASK;
  auto* t_page = static_cast<nullb_page*>(xa_load(root_of(nb, is_cache), idx));
  if (t_page && (for_write || test_bit(sector_bit, &t_page->bitmap))) return t_page;
  return nullptr;
}

// Copies the blocks set in c_page into t_page (and sets their bits there).
void copy_set_blocks(nullb* nb, nullb_page* t_page, const nullb_page* c_page, copy_mode mode) {
  const unsigned bs = nb->dev.blocksize;
  const unsigned step = bs >> SECTOR_SHIFT;
  char* src = mode == copy_mode::legacy ? static_cast<char*>(kmap_local_page(c_page->page)) : nullptr;
  char* dst = mode == copy_mode::legacy ? static_cast<char*>(kmap_local_page(t_page->page)) : nullptr;
  for (unsigned i = 0; i < PAGE_SECTORS; i += step) {
    if (!test_bit(i, &c_page->bitmap)) continue;
    size_t offset = size_t{i} << SECTOR_SHIFT;
    if (mode == copy_mode::legacy)
      std::memcpy(dst + offset, src + offset, bs);
    else
      memcpy_page(t_page->page, offset, c_page->page, offset, bs);
    set_bit(i, &t_page->bitmap);
  }
  if (dst) kunmap_local(dst);
  if (src) kunmap_local(src);
}

// null_flush_cache_page: moves one LOCKed cache page's blocks to the data tree.
int null_flush_cache_page(nullb* nb, std::unique_lock<std::mutex>& lk, nullb_page* c_page, copy_mode mode) {
  unsigned long idx = c_page->index;
  nullb_page* t_page = null_insert_page(nb, lk, sector_t{idx} << PAGE_SECTORS_SHIFT, true);

  clear_bit(NULLB_PAGE_LOCK, &c_page->bitmap);
  if (test_bit(NULLB_PAGE_FREE, &c_page->bitmap)) {  // discarded while the lock was dropped
    null_free_page(nb, c_page);
    if (t_page && null_page_empty(t_page)) {
      if (nullb_page* ret = delete_item(&nb->data, idx, t_page)) null_free_page(nb, ret);
    }
    return 0;
  }
  if (!t_page) return -ENOMEM;

  copy_set_blocks(nb, t_page, c_page, mode);
  if (nullb_page* ret = delete_item(&nb->cache, idx, c_page)) null_free_page(nb, ret);
  nb->curr_cache -= PAGE_SIZE;
  return 0;
}

}  // namespace

bool null_page_empty(const nullb_page* page) {
  return (page->bitmap & ((1ul << (MAP_SZ - 2)) - 1)) == 0;
}

nullb_page* null_lookup_page(nullb* nb, sector_t sector, bool for_write, bool ignore_cache) {
  nullb_page* page = nullptr;
  if (!ignore_cache) page = lookup_one(nb, sector, for_write, true);
  if (page) return page;
  return lookup_one(nb, sector, for_write, false);
}

nullb_page* null_insert_page(nullb* nb, std::unique_lock<std::mutex>& lk, sector_t sector, bool ignore_cache) {
  nullb_page* t_page = null_lookup_page(nb, sector, true, ignore_cache);
  if (t_page) return t_page;

  lk.unlock();
  t_page = null_alloc_page(nb);
  lk.lock();
  if (!t_page) return null_lookup_page(nb, sector, true, ignore_cache);

  unsigned long idx = sector >> PAGE_SECTORS_SHIFT;
  t_page->index = idx;
  return null_radix_tree_insert(nb, idx, t_page, !ignore_cache);
}

void null_free_sector(nullb* nb, sector_t sector, bool is_cache) {
  xarray* root = root_of(nb, is_cache);
  unsigned long idx = sector >> PAGE_SECTORS_SHIFT;
  auto* t_page = static_cast<nullb_page*>(xa_load(root, idx));
  if (!t_page) return;
  clear_bit(sector & SECTOR_MASK, &t_page->bitmap);
  if (null_page_empty(t_page)) {
    if (nullb_page* ret = delete_item(root, idx, t_page)) null_free_page(nb, ret);
    if (is_cache) nb->curr_cache -= PAGE_SIZE;
  }
}

void null_free_device_storage(nullb* nb, bool is_cache) {
  xarray* root = root_of(nb, is_cache);
  unsigned long idx;
  void* entry;
  xa_for_each(root, idx, entry) {
    xa_erase(root, idx);
    null_free_page(nb, static_cast<nullb_page*>(entry));
  }
  if (is_cache) nb->curr_cache = 0;
}

int null_make_cache_space(nullb* nb, std::unique_lock<std::mutex>& lk, uint64_t n, copy_mode mode) {
  nullb_page* c_pages[FREE_BATCH];
  uint64_t flushed = 0;
  const uint64_t cache_bytes = uint64_t{nb->dev.cache_size} << 20;
  for (;;) {
    if (cache_bytes > nb->curr_cache + n || nb->curr_cache == 0) return 0;

    // radix_tree_gang_lookup from cache_flush_pos; LOCK what nobody else is
    // flushing, so that it cannot be freed while the lock is dropped.
    int nr_pages = 0;
    unsigned long pos = nb->cache_flush_pos;
    for (void* e = xa_find(&nb->cache, &pos, ULONG_MAX); e && nr_pages < FREE_BATCH;
         e = xa_find_after(&nb->cache, &pos, ULONG_MAX)) {
      auto* c_page = static_cast<nullb_page*>(e);
      nb->cache_flush_pos = c_page->index;
      if (test_bit(NULLB_PAGE_LOCK, &c_page->bitmap)) {
        c_pages[nr_pages++] = nullptr;
      } else {
        set_bit(NULLB_PAGE_LOCK, &c_page->bitmap);
        c_pages[nr_pages++] = c_page;
      }
    }

    uint64_t one_round = 0;
    for (int i = 0; i < nr_pages; i++) {
      if (!c_pages[i]) continue;
      if (int err = null_flush_cache_page(nb, lk, c_pages[i], mode)) {
        // Unlike the kernel, release the rest of the batch rather than leave it LOCKed.
        for (int j = i + 1; j < nr_pages; j++) {
          if (!c_pages[j]) continue;
          clear_bit(NULLB_PAGE_LOCK, &c_pages[j]->bitmap);
          if (test_bit(NULLB_PAGE_FREE, &c_pages[j]->bitmap)) null_free_page(nb, c_pages[j]);
        }
        return err;
      }
      one_round++;
    }
    flushed += one_round << PAGE_SHIFT;

    if (n <= flushed) return 0;
    if (nr_pages == 0) nb->cache_flush_pos = 0;
    if (one_round == 0) {  // give other threads a chance
      lk.unlock();
      std::this_thread::yield();
      lk.lock();
    }
  }
}

int null_handle_flush(nullb* nb, copy_mode mode) {
  if (!null_cache_active(nb)) return 0;
  std::unique_lock lk(nb->lock);
  int err;
  for (;;) {
    err = null_make_cache_space(nb, lk, uint64_t{nb->dev.cache_size} << 20, mode);
    if (err || nb->curr_cache == 0) break;
  }
  return err;
}

// Clears each block of the range in both trees (the kernel's loop of
// null_free_sector), visiting only the pages present.
int null_handle_discard(nullb* nb, sector_t sector, sector_t nr_sectors) {
  const sector_t step = nb->dev.blocksize >> SECTOR_SHIFT;
  const sector_t end = sector + nr_sectors;
  std::lock_guard guard(nb->lock);
  for (bool is_cache : {false, true}) {
    if (is_cache && !null_cache_active(nb)) break;
    xarray* root = root_of(nb, is_cache);
    unsigned long idx = sector >> PAGE_SECTORS_SHIFT;
    const unsigned long last = (end - 1) >> PAGE_SECTORS_SHIFT;
    for (void* e = xa_find(root, &idx, last); e; e = xa_find_after(root, &idx, last)) {
      sector_t page_first = sector_t{idx} << PAGE_SECTORS_SHIFT;
      sector_t from = std::max(sector, page_first), to = std::min(end, page_first + PAGE_SECTORS);
      for (sector_t s = from; s < to; s += step) null_free_sector(nb, s, is_cache);
    }
  }
  return 0;
}

int null_check_space(nullb* nb, sector_t sector, uint64_t bytes, bool is_fua, const char** why) {
  if (!nb->dev.max_pages || !bytes) return 0;
  const bool ignore_cache = !null_cache_active(nb) || is_fua;
  const sector_t end = sector + (bytes >> SECTOR_SHIFT);
  uint64_t needed = 0;
  std::lock_guard guard(nb->lock);
  for (sector_t s = sector; s < end; s = (s | SECTOR_MASK) + 1)
    needed += null_lookup_page(nb, s, true, ignore_cache) == nullptr;
  const uint64_t used = nb->nr_pages.load(std::memory_order_relaxed);
  if (used > nb->dev.max_pages || needed > nb->dev.max_pages - used) {
    *why = "null_blk: the write would exceed max_pages";
    return -ENOSPC;
  }
  return 0;
}

}  // namespace iov::drivers::internal
