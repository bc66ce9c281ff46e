// brd.cc: the request path of the RAM disk (brd.hpp), after the kernel's
// drivers/block/brd.c: brd_rw_bvec's page-by-page copy, brd_insert_page's
// xa_cmpxchg, brd_do_discard's erase and deferred free.
//
//   brd_device::submit(rq)  ->  read<C> / write<C> / discard ... (namespace drivers::internal)
//
// Each page-sized piece of a request is handled inside its own RCU read-side
// section: the page found by xa_load stays valid until the section ends even
// if a discard erases it meanwhile (it is freed with free_page_rcu). A run of
// READs in a batch (submit_reads) is looked up and copied in the one section
// blkdev::submit_batch holds for it.
#include "iov_drivers/brd.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "iov/highmem.hpp"
#include "iov/position.hpp"
#include "iov/prefetch.hpp"
#include "iov/rcu.hpp"
#include "iov_drivers/internal/brd.hpp"
#include "iov_drivers/internal/services.hpp"
#include "iov_drivers/internal/transfer.hpp"

namespace iov {

namespace {
constexpr unsigned PAGE_SECTORS_SHIFT = PAGE_SHIFT - SECTOR_SHIFT;
constexpr sector_t PAGE_SECTORS = sector_t{1} << PAGE_SECTORS_SHIFT;
}  // namespace

namespace drivers::internal {
namespace {

// One page's part of a byte range.
struct piece {
  unsigned long idx;
  size_t offset;
  size_t len;
};
// The first piece of a byte range (empty when the range is).
piece first_piece(uint64_t pos, uint64_t bytes) {
  const size_t offset = static_cast<size_t>(pos & ~PAGE_MASK);
  const size_t len = static_cast<size_t>(std::min<uint64_t>(bytes, PAGE_SIZE - offset));
  return {static_cast<unsigned long>(pos >> PAGE_SHIFT), offset, len};
}
template <class F>
void for_each_piece(uint64_t pos, uint64_t bytes, F&& f) {
  while (bytes) {
    const piece p = first_piece(pos, bytes);
    if (!f(p)) return;
    pos += p.len;
    bytes -= p.len;
  }
}

// The page budget: committed_ counts pages stored plus pages reserved by
// writes in flight, and never exceeds max_pages when that is set.
bool charge(brd* brd, uint64_t n) {
  const uint64_t max = brd->config.max_pages;
  uint64_t cur = brd->committed.load(std::memory_order_relaxed);
  do {
    if (max && (cur > max || n > max - cur)) return false;
  } while (!brd->committed.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}
void uncharge(brd* brd, uint64_t n) { brd->committed.fetch_sub(n, std::memory_order_relaxed); }

// brd_insert_page: allocate a zeroed page and insert it unless another
// writer did first, in which case its page is used. Called inside the read
// section, so the page returned stays valid while the caller copies. A
// reserved page (*reserved > 0) is already charged.
page* insert_page(brd* brd, unsigned long idx, uint64_t* reserved) {
  if (*reserved)
    --*reserved;
  else if (!charge(brd, 1))
    return nullptr;
  page* pg = alloc_page(GFP_NOIO | __GFP_ZERO);
  if (!pg) {
    uncharge(brd, 1);
    return nullptr;
  }
  void* cur = xa_cmpxchg(&brd->brd_pages, idx, nullptr, pg, GFP_NOIO);
  if (cur) {  // another writer's page, or an error entry
    free_page(pg);
    uncharge(brd, 1);
    return xa_is_err(cur) ? nullptr : static_cast<page*>(cur);
  }
  brd->brd_nr_pages.fetch_add(1, std::memory_order_relaxed);
  return pg;
}

// Erases one page and returns it (nullptr: none); readers may still hold it.
page* erase_page_at(brd* brd, unsigned long idx) {
  auto* old = static_cast<page*>(xa_erase(&brd->brd_pages, idx));
  if (old) {
    brd->brd_nr_pages.fetch_sub(1, std::memory_order_relaxed);
    uncharge(brd, 1);
  }
  return old;
}

// Erases one page and frees it once no reader can hold it (brd_free_one_page
// through call_rcu in the kernel). Outside any read section.
void free_page_at(brd* brd, unsigned long idx) { free_page_rcu(erase_page_at(brd, idx)); }

// Frees the pages with index in [first, last], visiting only those present.
void free_range(brd* brd, unsigned long first, unsigned long last) {
  unsigned long idx = first;
  for (void* e = xa_find(&brd->brd_pages, &idx, last); e; e = xa_find_after(&brd->brd_pages, &idx, last))
    free_page_at(brd, idx);
}

// One page's part of a READ: from the page, or zeros where there is none.
template <class C>
bool read_piece(page* pg, const piece& p, iov_iter* it) {
  return (pg ? C::page_to_iter(pg, p.offset, p.len, it) : C::fill_iter(0, p.len, it)) == p.len;
}
int read_result(blk_request& rq, bool ok) {
  return ok ? 0 : blk_fail(rq, -EFAULT, "brd: the iterator ended before its count");
}

// Each piece in a read-side section of its own, as brd_rw_bvec.
template <class C>
int read(brd* brd, blk_request& rq) {
  iov_iter* it = rq.iter;
  bool ok = true;
  for_each_piece(rq.sector << SECTOR_SHIFT, iov_iter_count(it), [&](const piece& p) {
    rcu_read_guard rcu;
    return ok = read_piece<C>(static_cast<page*>(iov::internal::xa_load_rcu(&brd->brd_pages, p.idx)), p, it);
  });
  return read_result(rq, ok);
}

// Inside the caller's read-side section, which holds `first`, the first
// piece's page (or nullptr), looked up in it. The first piece is copied
// before any other is looked up: most READs are within one page.
template <class C>
int read_held(brd* brd, blk_request& rq, page* first) {
  iov_iter* it = rq.iter;
  const uint64_t pos = rq.sector << SECTOR_SHIFT, bytes = iov_iter_count(it);
  const piece p = first_piece(pos, bytes);
  bool ok = read_piece<C>(first, p, it);
  if (ok && p.len < bytes)
    for_each_piece(pos + p.len, bytes - p.len, [&](const piece& q) {
      return ok = read_piece<C>(static_cast<page*>(iov::internal::xa_load_rcu(&brd->brd_pages, q.idx)), q, it);
    });
  return read_result(rq, ok);
}

// Would this piece of a write need a new page? Not if the page exists, nor,
// with zero detection, if the piece is all zero.
template <class C>
bool needs_page(brd* brd, const piece& p, const iov_iter* it, detect_zeroes dz) {
  if (xa_load(&brd->brd_pages, p.idx)) return false;
  return dz == detect_zeroes::off || !C::iter_is_zero(it, p.len);
}

// With a budget, reserve the pages the write will add before touching
// anything, so that -ENOSPC leaves the device as it was.
template <class C>
int reserve(brd* brd, blk_request& rq, detect_zeroes dz, uint64_t* reserved) {
  iov_iter probe = *rq.iter;
  uint64_t needed = 0;
  for_each_piece(rq.sector << SECTOR_SHIFT, iov_iter_count(rq.iter), [&](const piece& p) {
    needed += needs_page<C>(brd, p, &probe, dz);
    iov_iter_advance(&probe, p.len);
    return true;
  });
  if (!charge(brd, needed)) return blk_fail(rq, -ENOSPC, "brd: the write would exceed max_pages");
  *reserved = needed;
  return 0;
}

// One page's part of a write whose bytes are all zero, with detection on:
// nothing to store in an absent page; with unmap, a page covered whole goes.
template <class C>
size_t write_zero_piece(brd* brd, const piece& p, iov_iter* it, detect_zeroes dz) {
  if (dz == detect_zeroes::unmap && p.len == PAGE_SIZE) {
    if (xa_load(&brd->brd_pages, p.idx)) free_page_at(brd, p.idx);
    iov_iter_advance(it, p.len);
    return p.len;
  }
  rcu_read_guard rcu;
  auto* pg = static_cast<page*>(xa_load(&brd->brd_pages, p.idx));
  if (!pg) {
    iov_iter_advance(it, p.len);
    return p.len;
  }
  return C::iter_to_page(pg, p.offset, p.len, it);
}

template <class C>
int write(brd* brd, blk_request& rq) {
  const detect_zeroes dz = brd->config.detect_zeroes;
  uint64_t reserved = 0;
  if (brd->config.max_pages)
    if (int err = reserve<C>(brd, rq, dz, &reserved)) return err;
  iov_iter* it = rq.iter;
  int err = 0;
  for_each_piece(rq.sector << SECTOR_SHIFT, iov_iter_count(it), [&](const piece& p) {
    if (dz != detect_zeroes::off && C::iter_is_zero(it, p.len)) {
      if (write_zero_piece<C>(brd, p, it, dz) != p.len) err = -EFAULT;
      return !err;
    }
    rcu_read_guard rcu;
    auto* pg = static_cast<page*>(xa_load(&brd->brd_pages, p.idx));
    if (!pg && !(pg = insert_page(brd, p.idx, &reserved))) {
      err = -ENOSPC;
      return false;
    }
    if (C::iter_to_page(pg, p.offset, p.len, it) != p.len) err = -EFAULT;
    return !err;
  });
  uncharge(brd, reserved);  // pages another writer inserted first
  if (err == -ENOSPC) return blk_fail(rq, err, "brd: out of memory for a page");
  if (err) return blk_fail(rq, err, "brd: the iterator ended before its count");
  return 0;
}

// Whole pages stored as they are (blkdev::replace_pages): each xa_store is
// one atomic switch from the old page to the new, the old freed after a
// grace period. With a page budget the pages the device lacks are charged
// first, so that -ENOSPC changes nothing; a page another writer inserts or
// a discard erases meanwhile is settled after. With zero detection, a page
// of zeros is handled as write() handles one. With `replaced` (cleared by
// the caller), the old pages go there instead of to free_page_rcu, those a
// page of zeros unmaps included: nothing here then waits for a grace period
// (free_page_rcu does without memory), so a caller may hold a read-side
// section around it.
int replace(brd* brd, pgoff_t index, page** pages, unsigned nr, const char** why, page** replaced) {
  const detect_zeroes dz = brd->config.detect_zeroes;
  auto is_zero = [&](unsigned i) { return dz != detect_zeroes::off && mem_is_zero(page_address(pages[i]), PAGE_SIZE); };
  uint64_t reserved = 0;
  if (brd->config.max_pages) {
    for (unsigned i = 0; i < nr; i++) reserved += !xa_load(&brd->brd_pages, index + i) && !is_zero(i);
    if (!charge(brd, reserved)) {
      for (unsigned i = 0; i < nr; i++) free_page(pages[i]);
      *why = "brd: the write would exceed max_pages";
      return -ENOSPC;
    }
  }
  // A page the device no longer holds: to `replaced`, else freed once no
  // reader can hold it (nullptr: nothing).
  auto retire = [&](unsigned i, page* old) {
    if (replaced)
      replaced[i] = old;
    else
      free_page_rcu(old);
  };
  int err = 0;
  uint64_t added = 0;
  for (unsigned i = 0; i < nr; i++) {
    const unsigned long idx = index + i;
    if (err) {  // past a failed store: never visible
      free_page(pages[i]);
      continue;
    }
    if (is_zero(i)) {
      if (dz == detect_zeroes::unmap)
        retire(i, erase_page_at(brd, idx));
      if (dz == detect_zeroes::unmap || !xa_load(&brd->brd_pages, idx)) {
        free_page(pages[i]);  // nothing to store: a hole reads as zeros
        continue;
      }
    }
    void* old = xa_store(&brd->brd_pages, idx, pages[i], GFP_NOIO);
    if (xa_is_err(old)) {
      free_page(pages[i]);
      err = xa_err(old);
      continue;
    }
    if (old)
      retire(i, static_cast<page*>(old));
    else
      added++;
  }
  brd->brd_nr_pages.fetch_add(added, std::memory_order_relaxed);
  // committed counts stored pages: settle what was reserved against what was added.
  if (added > reserved)
    brd->committed.fetch_add(added - reserved, std::memory_order_relaxed);
  else
    uncharge(brd, reserved - added);
  if (err) *why = "brd: out of memory for the page index";
  return err;
}

// brd_do_discard: only the whole pages of the range are freed.
void discard(brd* brd, sector_t sector, sector_t nr_sectors) {
  sector_t first = (sector + PAGE_SECTORS - 1) & ~(PAGE_SECTORS - 1);
  sector_t end = (sector + nr_sectors) & ~(PAGE_SECTORS - 1);
  if (end > first) free_range(brd, first >> PAGE_SECTORS_SHIFT, (end >> PAGE_SECTORS_SHIFT) - 1);
}

// The range reads as zeros afterwards: whole pages are freed (or, with
// REQ_NOUNMAP, cleared), the partial ones at the ends cleared if present.
template <class C>
void write_zeroes(brd* brd, sector_t sector, sector_t nr_sectors, bool unmap) {
  auto clear = [brd](const piece& p) {
    rcu_read_guard rcu;
    if (auto* pg = static_cast<page*>(xa_load(&brd->brd_pages, p.idx))) C::fill_page(pg, p.offset, 0, p.len);
    return true;
  };
  uint64_t pos = sector << SECTOR_SHIFT, end = (sector + nr_sectors) << SECTOR_SHIFT;
  uint64_t whole_first = (pos + PAGE_SIZE - 1) & PAGE_MASK, whole_end = end & PAGE_MASK;
  if (whole_end <= whole_first) {
    for_each_piece(pos, end - pos, clear);
    return;
  }
  for_each_piece(pos, whole_first - pos, clear);
  unsigned long first = whole_first >> PAGE_SHIFT, last = (whole_end >> PAGE_SHIFT) - 1;
  if (unmap) {
    free_range(brd, first, last);
  } else {
    unsigned long idx = first;
    for (void* e = xa_find(&brd->brd_pages, &idx, last); e; e = xa_find_after(&brd->brd_pages, &idx, last))
      clear(piece{idx, 0, PAGE_SIZE});
  }
  for_each_piece(whole_end, end - whole_end, clear);
}

// Asks for the first kilobyte of a stored page, for writing where the
// request writes (the hardware prefetcher follows on from there).
void prefetch_head(const page* pg, bool write) {
  constexpr size_t kHeadBytes = 1024;
  if (write)
    prefetchw_range(page_address(pg), kHeadBytes);
  else
    prefetch_range(page_address(pg), kHeadBytes);
}

// The slot lines of a request's pages but the first `skip` lines (eight
// slots a line, at most eight lines a request: a longer request's later
// lookups overlap its own copies anyway). In a read-side section.
void prefetch_slot_lines(const xarray* pages, const blk_request& rq, unsigned skip) {
  constexpr unsigned long kSlotsPerLine = 64 / sizeof(void*);
  unsigned lines = 0;
  for_each_piece(rq.sector << SECTOR_SHIFT, iov_iter_count(rq.iter), [&](const piece& p) {
    if (lines == 0 || p.idx % kSlotsPerLine == 0) {
      if (lines >= skip) iov::internal::xa_prefetch_slot(pages, p.idx);
      lines++;
    }
    return lines < 8;
  });
}
}  // namespace
}  // namespace drivers::internal

int brd_device::submit(blk_request& rq) {
  const char* why = nullptr;
  switch (rq.op) {
    case REQ_OP_READ:
    case REQ_OP_WRITE:
      if (int err = drivers::internal::blk_check_data(rq, get_capacity(), SECTOR_SIZE, &why)) return blk_fail(rq, err, why);
      return drivers::internal::blk_dispatch(get_copy_mode(), get_iteration(), [&](auto copier) {
        using C = decltype(copier);
        return rq.op == REQ_OP_READ ? drivers::internal::read<C>(brd_.get(), rq) : drivers::internal::write<C>(brd_.get(), rq);
      });
    case REQ_OP_DISCARD:
    case REQ_OP_WRITE_ZEROES:
      if (int err = drivers::internal::blk_check_sectors(rq.sector, rq.nr_sectors, get_capacity(), SECTOR_SIZE, &why))
        return blk_fail(rq, err, why);
      if (rq.op == REQ_OP_DISCARD) {
        drivers::internal::discard(brd_.get(), rq.sector, rq.nr_sectors);
        return 0;
      }
      drivers::internal::blk_dispatch(get_copy_mode(), get_iteration(), [&](auto copier) {
        drivers::internal::write_zeroes<decltype(copier)>(brd_.get(), rq.sector, rq.nr_sectors, !(rq.flags & REQ_NOUNMAP));
      });
      return 0;
    case REQ_OP_FLUSH:
      return 0;  // nothing is cached
    default:
      return blk_fail(rq, -EOPNOTSUPP, "brd: operation not supported");
  }
}

// Two passes over the window's WRITEs, neither waiting for what it asks for:
// the slot lines of each one's pages, then each one's first stored page's
// head. By the second pass the first slot has arrived and the rest are on
// their way, so the window's misses overlap; then every copy starts from
// lines already in flight. No head for nocache writes, whose streaming stores
// would only evict it. READs are submit_reads' to ask for, as it looks their
// pages up: a window without a WRITE costs one test a request here. A request
// beyond the end finds no leaf.
void brd_device::prefetch_requests(std::span<const blk_request> rqs) {
  auto is_write = [](const blk_request& rq) { return rq.op == REQ_OP_WRITE && rq.iter; };
  const auto first = std::find_if(rqs.begin(), rqs.end(), is_write);
  if (first == rqs.end()) return;
  xarray* pages = &brd_->brd_pages;
  rcu_read_guard rcu;
  for (auto rq = first; rq != rqs.end(); ++rq)
    if (is_write(*rq)) drivers::internal::prefetch_slot_lines(pages, *rq, 0);
  if (get_copy_mode() == copy_mode::nocache) return;
  for (auto rq = first; rq != rqs.end(); ++rq) {
    if (!is_write(*rq)) continue;
    const auto idx = static_cast<unsigned long>(rq->sector >> PAGE_SECTORS_SHIFT);
    if (auto* pg = static_cast<page*>(internal::xa_load_rcu(pages, idx))) drivers::internal::prefetch_head(pg, true);
  }
}

// Each sector's slot line asked for, the upper levels walked (they stay
// cached). The read-side section keeps the leaves valid while they are read;
// a slot changes nothing but what is in the cache.
void brd_device::prefetch_lookups(std::span<const sector_t> sectors) {
  const xarray* pages = &brd_->brd_pages;
  rcu_read_guard rcu;
  for (const sector_t s : sectors) {
    const auto idx = static_cast<unsigned long>(s >> PAGE_SECTORS_SHIFT);
    if (const internal::xa_node* leaf = internal::xa_leaf(pages, idx)) prefetch(&leaf->slots[idx & XA_CHUNK_MASK]);
  }
}

// In submit_batch's read-side section, for a run of READs, three passes:
// each READ checked as submit() checks it, the leaf holding its first page
// found and the slot's line asked for (and, for a READ past its first page,
// its later pages' slot lines); then each slot loaded from its leaf and the
// page's head asked for; then the copies. One walk of the tree a READ within
// one page, and the window's misses on slots, then on heads, overlap. A leaf
// found stays valid memory in the section, and its slots change only while
// it is in the tree (it leaves it empty): what the load reads is the page
// of some moment since the walk. The section keeps every page found until
// the copies are done (a discard meanwhile frees it after a grace period);
// a page another thread inserts meanwhile is not seen, as if the READ had
// come before that WRITE. The copy settings are read once per run. A run is
// at most a window long (submit_batch): the loop is for any other caller.
void brd_device::submit_reads(std::span<blk_request> rqs, int* results) {
  constexpr size_t kChunk = kBatchWindow;
  const xarray* pages = &brd_->brd_pages;
  for (size_t i = 0; i < rqs.size(); i += kChunk) {
    const size_t n = std::min(kChunk, rqs.size() - i);
    const internal::xa_node* leaf[kChunk];
    page* first[kChunk];
    for (size_t k = 0; k < n; k++) {
      blk_request& rq = rqs[i + k];
      const char* why = nullptr;
      leaf[k] = nullptr;
      if (int err = drivers::internal::blk_check_data(rq, get_capacity(), SECTOR_SIZE, &why)) {
        results[i + k] = blk_fail(rq, err, why);
        continue;
      }
      results[i + k] = 0;
      const auto idx = static_cast<unsigned long>(rq.sector >> PAGE_SECTORS_SHIFT);
      if ((leaf[k] = internal::xa_leaf(pages, idx))) __builtin_prefetch(&leaf[k]->slots[idx & XA_CHUNK_MASK]);
      if (const uint64_t bytes = iov_iter_count(rq.iter);
          drivers::internal::first_piece(rq.sector << SECTOR_SHIFT, bytes).len < bytes)  // past its first page
        drivers::internal::prefetch_slot_lines(pages, rq, 1);
    }
    for (size_t k = 0; k < n; k++) {
      const auto idx = static_cast<unsigned long>(rqs[i + k].sector >> PAGE_SECTORS_SHIFT);
      first[k] = leaf[k] ? static_cast<page*>(leaf[k]->slots[idx & XA_CHUNK_MASK].load(std::memory_order_acquire)) : nullptr;
      if (first[k]) drivers::internal::prefetch_head(first[k], false);
    }
    drivers::internal::blk_dispatch(get_copy_mode(), get_iteration(), [&](auto copier) {
      for (size_t k = 0; k < n; k++)
        if (results[i + k] == 0) results[i + k] = drivers::internal::read_held<decltype(copier)>(brd_.get(), rqs[i + k], first[k]);
    });
  }
}

// --- Services ------------------------------------------------------------

int brd_device::do_crc32c(sector_t sector, sector_t nr_sectors, uint32_t* crc, const char**) {
  drivers::internal::crc_builder b(*crc);
  drivers::internal::for_each_piece(sector << SECTOR_SHIFT, nr_sectors << SECTOR_SHIFT, [&](const drivers::internal::piece& p) {
    rcu_read_guard rcu;
    if (auto* pg = static_cast<page*>(xa_load(&brd_->brd_pages, p.idx))) {
      char* kaddr = static_cast<char*>(kmap_local_page(pg));
      b.data(kaddr + p.offset, p.len);
      kunmap_local(kaddr);
    } else {
      b.fill(0, p.len);
    }
    return true;
  });
  *crc = b.finish();
  return 0;
}

int brd_device::do_map_extents(sector_t sector, sector_t nr_sectors, std::vector<blk_extent>* out,
                               const char**, unsigned how) {
  drivers::internal::extent_builder map(out);
  drivers::internal::for_each_piece(sector << SECTOR_SHIFT, nr_sectors << SECTOR_SHIFT, [&](const drivers::internal::piece& p) {
    const sector_t first = (sector_t{p.idx} << PAGE_SECTORS_SHIFT) + (p.offset >> SECTOR_SHIFT);
    const sector_t nr = p.len >> SECTOR_SHIFT;
    rcu_read_guard rcu;
    auto* pg = static_cast<page*>(xa_load(&brd_->brd_pages, p.idx));
    if (!pg) {
      map.add(first, nr, BLK_EXTENT_HOLE | BLK_EXTENT_ZERO);
      return true;
    }
    if (how & BLK_MAP_ALLOCATION) {
      map.add(first, nr, 0);
      return true;
    }
    const char* kaddr = static_cast<const char*>(kmap_local_page(pg)) + p.offset;
    if (mem_is_zero(kaddr, p.len)) {
      map.add(first, nr, BLK_EXTENT_ZERO);
    } else {
      for (sector_t s = 0; s < nr; s++)
        map.add(first + s, 1, mem_is_zero(kaddr + (s << SECTOR_SHIFT), SECTOR_SIZE) ? BLK_EXTENT_ZERO : 0);
    }
    kunmap_local(kaddr);
    return true;
  });
  return 0;
}

// Inside the lease's read-side section (blkdev::lend_pages opens it).
int brd_device::do_lend_pages(sector_t sector, sector_t nr_sectors, std::vector<bio_vec>* out, const char**) {
  drivers::internal::for_each_piece(sector << SECTOR_SHIFT, nr_sectors << SECTOR_SHIFT, [&](const drivers::internal::piece& p) {
    if (auto* pg = static_cast<page*>(xa_load(&brd_->brd_pages, p.idx)))
      out->push_back({pg, static_cast<unsigned>(p.len), static_cast<unsigned>(p.offset)});
    else
      drivers::internal::lend_zeroes(p.len, out);
    return true;
  });
  return 0;
}

int brd_device::do_replace_pages(pgoff_t index, page** pages, unsigned nr, const char** why, page** replaced) {
  return drivers::internal::replace(brd_.get(), index, pages, nr, why, replaced);
}

// --- Setup ---------------------------------------------------------------

namespace {
queue_limits brd_limits() {
  queue_limits lim;
  lim.logical_block_size = SECTOR_SIZE;
  lim.physical_block_size = PAGE_SIZE;  // so that partitions align on pages, as the kernel's
  lim.max_hw_discard_sectors = UINT32_MAX >> SECTOR_SHIFT;
  lim.discard_granularity = PAGE_SIZE;
  lim.max_write_zeroes_sectors = UINT32_MAX >> SECTOR_SHIFT;
  return lim;
}
}  // namespace

brd_device::brd_device(const brd_config& config)
    : blkdev(config.size >> SECTOR_SHIFT, brd_limits()), brd_(std::make_unique<drivers::internal::brd>(config)) {
  set_copy_mode(config.copy_mode);
  set_iteration(config.iteration);
  (void)rcu_start_callback_thread();  // pages replaced or discarded are freed from it
}

absl::StatusOr<std::unique_ptr<brd_device>> brd_device::create(const brd_config& config) {
  if (config.size == 0 || config.size % SECTOR_SIZE)
    return absl::InvalidArgumentError("brd: size must be a positive multiple of 512 bytes");
  return std::unique_ptr<brd_device>(new brd_device(config));
}

void brd_device::free_all_pages() {
  unsigned long idx;
  void* entry;
  xa_for_each(&brd_->brd_pages, idx, entry) {
    xa_erase(&brd_->brd_pages, idx);
    free_page(static_cast<page*>(entry));  // nobody can be reading: no grace period needed
  }
  brd_->brd_nr_pages.store(0, std::memory_order_relaxed);
  brd_->committed.store(0, std::memory_order_relaxed);
}

brd_device::~brd_device() { free_all_pages(); }

uint64_t brd_device::nr_pages() const { return brd_->brd_nr_pages.load(std::memory_order_relaxed); }
const brd_config& brd_device::config() const { return brd_->config; }

}  // namespace iov
