// main.cc: null_blk's request path, after the kernel's
// drivers/block/null_blk/main.c (copy_to_nullb, copy_from_nullb, null_transfer,
// null_process_cmd, null_handle_cmd); the pages and the cache are in
// pages.cc, the zones in zoned.cc, setup and services in device.cc.
//
//   nullb_device::submit(rq) -> null_process_zoned_cmd (zoned) -> null_process_cmd
//                            -> null_process_cmd -> null_read<C> / null_write<C>
//                                                   null_handle_discard / null_handle_write_zeroes
#include <algorithm>
#include <cerrno>

#include "iov/position.hpp"
#include "iov/bvec.hpp"
#include "iov_drivers/internal/null_blk.hpp"
#include "iov_drivers/internal/services.hpp"
#include "iov_drivers/internal/transfer.hpp"

namespace iov {

namespace drivers::internal {

namespace {

constexpr const char* kShortIter = "null_blk: the iterator ended before its count";

// The bytes of a block-aligned transfer at pos that the next step moves.
size_t block_piece(const nullb* nb, uint64_t pos, uint64_t left) {
  return static_cast<size_t>(std::min<uint64_t>({nb->dev.blocksize, left, PAGE_SIZE - offset_in_page(pos)}));
}

// copy_to_nullb: block by block into the cache (or, for FUA and without a
// cache, the data tree), setting each block's bit. A page that the iterator
// failed to fill keeps no bit, so it reads as before.
template <class C>
int copy_to_nullb(nullb* nb, std::unique_lock<std::mutex>& lk, iov_iter* it, uint64_t pos, uint64_t n,
                  bool is_fua, const char** why) {
  const bool cache = null_cache_active(nb);
  for (uint64_t count = 0; count < n;) {
    size_t temp = block_piece(nb, pos, n - count);
    sector_t sector = pos >> SECTOR_SHIFT;
    if (cache && !is_fua) null_make_cache_space(nb, lk, PAGE_SIZE, C::mode);
    nullb_page* t_page = null_insert_page(nb, lk, sector, !cache || is_fua);
    if (!t_page) {
      *why = "null_blk: out of memory for a page";
      return -ENOSPC;
    }
    if (C::iter_to_page(t_page->page, offset_in_page(pos), temp, it) != temp) {
      *why = kShortIter;
      return -EFAULT;
    }
    set_bit(sector & SECTOR_MASK, &t_page->bitmap);
    if (is_fua) null_free_sector(nb, sector, true);
    count += temp;
    pos += temp;
  }
  return 0;
}

// copy_from_nullb: a block whose bit is set in neither tree reads as zeros.
template <class C>
int copy_from_nullb(nullb* nb, iov_iter* it, uint64_t pos, uint64_t n, const char** why) {
  const bool ignore_cache = !null_cache_active(nb);
  for (uint64_t count = 0; count < n;) {
    size_t temp = block_piece(nb, pos, n - count);
    nullb_page* t_page = null_lookup_page(nb, pos >> SECTOR_SHIFT, false, ignore_cache);
    size_t done = t_page ? C::page_to_iter(t_page->page, offset_in_page(pos), temp, it) : C::fill_iter(0, temp, it);
    if (done != temp) {
      *why = kShortIter;
      return -EFAULT;
    }
    count += temp;
    pos += temp;
  }
  return 0;
}

// null_transfer for a read. On a zoned device each zone's part below its
// write pointer comes from storage and the rest is 0xFF (null_fill_pattern);
// the caller holds zone_lock.
template <class C>
int null_read(nullb* nb, iov_iter* it, uint64_t pos, uint64_t n, const char** why) {
  std::lock_guard guard(nb->lock);
  if (!nb->dev.zoned) return copy_from_nullb<C>(nb, it, pos, n, why);
  while (n) {
    sector_t sector = pos >> SECTOR_SHIFT;
    uint64_t zone_end = ((sector_t{null_zone_no(nb, sector)} + 1) * nb->zone_size_sects) << SECTOR_SHIFT;
    uint64_t len = std::min(n, zone_end - pos);
    uint64_t valid_len = null_zone_valid_read_len(nb, sector, len);
    if (valid_len)
      if (int err = copy_from_nullb<C>(nb, it, pos, valid_len, why)) return err;
    const size_t fill = static_cast<size_t>(len - valid_len);
    if (fill && C::fill_iter(0xff, fill, it) != fill) {
      *why = kShortIter;
      return -EFAULT;
    }
    pos += len;
    n -= len;
  }
  return 0;
}

template <class C>
int null_write(nullb* nb, iov_iter* it, uint64_t pos, uint64_t n, bool is_fua, const char** why) {
  std::unique_lock lk(nb->lock);
  return copy_to_nullb<C>(nb, lk, it, pos, n, is_fua, why);
}

// REQ_OP_WRITE_ZEROES, which the kernel's null_blk lacks: without
// REQ_NOUNMAP the blocks are unstored, as a discard does (they read as
// zeros and cost nothing); with it the blocks stay stored: zeros are written
// through the write path (cache, FUA and max_pages as for a WRITE), from one
// shared zero page.
int null_handle_write_zeroes(nullb* nb, blk_request& rq, sector_t sector, sector_t nr_sectors) {
  if (!(rq.flags & REQ_NOUNMAP)) return null_handle_discard(nb, sector, nr_sectors);
  constexpr unsigned kBatch = 64;  // pages of zeros per write
  bio_vec bv[kBatch];
  for (bio_vec& b : bv) bvec_set_page(&b, zero_page(), PAGE_SIZE, 0);
  while (nr_sectors) {
    const sector_t n = std::min<sector_t>(nr_sectors, kBatch * PAGE_SECTORS);
    iov_iter it;
    iov_iter_bvec(&it, ITER_SOURCE, bv, kBatch, n << SECTOR_SHIFT);
    blk_request w{.op = REQ_OP_WRITE, .flags = rq.flags & REQ_FUA, .sector = sector, .iter = &it};
    if (int err = null_process_cmd(nb, w, REQ_OP_WRITE, sector, n)) return blk_fail(rq, err, w.error);
    sector += n;
    nr_sectors -= n;
  }
  return 0;
}

}  // namespace

bool null_req_is_fua(const nullb* nb, const blk_request& rq) {
  return null_cache_active(nb) && (rq.flags & REQ_FUA) && nb->dev.fua;
}

int null_process_cmd(nullb* nb, blk_request& rq, req_op op, sector_t sector, sector_t nr_sectors) {
  if (!nb->dev.memory_backed) {
    if (rq.iter) iov_iter_advance(rq.iter, iov_iter_count(rq.iter));  // completes without data
    return 0;
  }
  if (op == REQ_OP_DISCARD) return null_handle_discard(nb, sector, nr_sectors);
  if (op == REQ_OP_WRITE_ZEROES) return null_handle_write_zeroes(nb, rq, sector, nr_sectors);

  // What the block layer makes of FUA and PREFLUSH for a device with a write
  // cache: FUA is passed down when the device supports it, else it becomes a
  // flush after the write; PREFLUSH is a flush before it.
  const copy_mode mode = nb->owner->get_copy_mode();
  const bool cache = null_cache_active(nb), is_write = op_is_write(op);
  const bool postflush = is_write && cache && (rq.flags & REQ_FUA) && !nb->dev.fua;
  if (is_write && cache && (rq.flags & REQ_PREFLUSH) && null_handle_flush(nb, mode))
    return blk_fail(rq, -ENOMEM, "null_blk: out of memory flushing the cache");

  const char* why = nullptr;
  const uint64_t pos = sector << SECTOR_SHIFT, n = iov_iter_count(rq.iter);
  const bool is_fua = null_req_is_fua(nb, rq);
  int err = blk_dispatch(mode, nb->owner->get_iteration(), [&](auto copier) {
    using C = decltype(copier);
    return is_write ? null_write<C>(nb, rq.iter, pos, n, is_fua, &why) : null_read<C>(nb, rq.iter, pos, n, &why);
  });
  if (err) return blk_fail(rq, err, why);
  if (postflush && null_handle_flush(nb, mode))
    return blk_fail(rq, -ENOMEM, "null_blk: out of memory flushing the cache");
  return 0;
}

}  // namespace drivers::internal

using namespace drivers::internal;

int nullb_device::submit(blk_request& rq) {
  nullb* nb = nullb_.get();
  const char* why = nullptr;
  sector_t nr_sectors = 0;
  switch (rq.op) {
    case REQ_OP_FLUSH:
      if (null_handle_flush(nb, get_copy_mode()))
        return blk_fail(rq, -ENOMEM, "null_blk: out of memory flushing the cache");
      return 0;
    case REQ_OP_ZONE_APPEND:
      if (!nb->dev.zoned) return blk_fail(rq, -EOPNOTSUPP, "null_blk: zone append on a device that is not zoned");
      [[fallthrough]];
    case REQ_OP_READ:
    case REQ_OP_WRITE:
      if (int err = blk_check_data(rq, get_capacity(), nb->dev.blocksize, &why)) return blk_fail(rq, err, why);
      nr_sectors = iov_iter_count(rq.iter) >> SECTOR_SHIFT;
      if (!nr_sectors) return 0;  // nothing to transfer: no zone changes state
      if (rq.op == REQ_OP_WRITE && !nb->dev.zoned && nb->dev.memory_backed)
        if (int err = null_check_space(nb, rq.sector, iov_iter_count(rq.iter), null_req_is_fua(nb, rq), &why))
          return blk_fail(rq, err, why);
      break;
    case REQ_OP_DISCARD:
      if (!nb->dev.discard)
        return blk_fail(rq, -EOPNOTSUPP, "null_blk: discard is off (discard=0, zoned, or not memory backed)");
      if (int err = blk_check_sectors(rq.sector, rq.nr_sectors, get_capacity(), nb->dev.blocksize, &why))
        return blk_fail(rq, err, why);
      nr_sectors = rq.nr_sectors;
      break;
    case REQ_OP_WRITE_ZEROES:
      if (nb->dev.zoned) return blk_fail(rq, -EOPNOTSUPP, "null_blk: write zeroes on a zoned device");
      if (int err = blk_check_sectors(rq.sector, rq.nr_sectors, get_capacity(), nb->dev.blocksize, &why))
        return blk_fail(rq, err, why);
      nr_sectors = rq.nr_sectors;
      if (nb->dev.memory_backed && (rq.flags & REQ_NOUNMAP))
        if (int err = null_check_space(nb, rq.sector, nr_sectors << SECTOR_SHIFT, null_req_is_fua(nb, rq), &why))
          return blk_fail(rq, err, why);
      break;
    case REQ_OP_ZONE_OPEN:
    case REQ_OP_ZONE_CLOSE:
    case REQ_OP_ZONE_FINISH:
    case REQ_OP_ZONE_RESET:
    case REQ_OP_ZONE_RESET_ALL:
      if (!nb->dev.zoned) return blk_fail(rq, -EOPNOTSUPP, "null_blk: zone operation on a device that is not zoned");
      // blkdev_zone_mgmt: the sector must start a zone.
      if (rq.op != REQ_OP_ZONE_RESET_ALL &&
          (rq.sector >= get_capacity() || rq.sector & (nb->zone_size_sects - 1)))
        return blk_fail(rq, -EINVAL, "null_blk: zone operation at a sector that does not start a zone");
      break;
    default:
      return blk_fail(rq, -EOPNOTSUPP, "null_blk: operation not supported");
  }
  if (nb->dev.zoned) return null_process_zoned_cmd(nb, rq);
  return null_process_cmd(nb, rq, rq.op, rq.sector, nr_sectors);
}

}  // namespace iov
