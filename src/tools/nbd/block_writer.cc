// block_writer.cc: see block_writer.hpp.
#include "nbd/block_writer.hpp"

#include <algorithm>
#include <cstring>

#include "iov/iov.hpp"

namespace iov::nbd {

int block_writer::write(uint64_t offset, uint64_t length, const unsigned char* src, unsigned rq_flags,
                        const char** why) {
  const uint64_t lbs = dev_.limits().logical_block_size;
  block_locks::guard g(locks_, offset / lbs, (offset + length + lbs - 1) / lbs);
  return write_range(offset, length, src, rq_flags, why);
}

int block_writer::commit(page_payload& pages, uint64_t offset, uint64_t length, unsigned rq_flags, const char** why) {
  const uint64_t lbs = dev_.limits().logical_block_size;
  const uint64_t first = offset / lbs, end = (offset + length) / lbs;
  int err;
  if (pages.whole_pages_only()) {
    block_locks::whole_guard g(locks_, first, end);
    err = pages.commit(dev_, rq_flags, why);
  } else {  // its partial pages may wait for a grace period: not in a read-side section
    block_locks::guard g(locks_, first, end);
    err = pages.commit(dev_, rq_flags, why);
  }
  pages.retire_replaced();
  return err;
}

// Bytes [offset, offset + length) of the device from src, or zeros when src
// is null: a partial block at either end by read-modify-write
// (write_partial), the whole blocks between in one request. The caller holds
// the blocks' stripes. 0 or the device's -errno, with *why.
int block_writer::write_range(uint64_t offset, uint64_t length, const unsigned char* src, unsigned rq_flags,
                              const char** why) {
  const uint64_t lbs = dev_.limits().logical_block_size, end = offset + length;
  uint64_t at = offset;
  auto take = [&](uint64_t n) {
    at += n;
    if (src)
      src += n;
  };
  if (at % lbs && at < end) {
    const uint64_t n = std::min(end, (at / lbs + 1) * lbs) - at;
    if (int err = write_partial(at / lbs, at % lbs, n, src, rq_flags, why))
      return err;
    take(n);
  }
  if (const uint64_t whole = (end - at) / lbs * lbs) {
    blk_request br{.op = src ? REQ_OP_WRITE : REQ_OP_WRITE_ZEROES, .flags = rq_flags, .sector = at >> SECTOR_SHIFT};
    iov_iter it;
    if (src) {
      iov_iter_ubuf(&it, ITER_SOURCE, const_cast<unsigned char*>(src), whole);
      br.iter = &it;
    } else {
      br.nr_sectors = whole >> SECTOR_SHIFT;
    }
    if (int err = dev_.submit(br)) {
      *why = br.error;
      return err;
    }
    take(whole);
  }
  if (at < end)
    return write_partial(at / lbs, 0, end - at, src, rq_flags, why);
  return 0;
}

// Bytes [at, at + n) of logical block `block` from src (zeros when null):
// the block read, changed and written back whole.
int block_writer::write_partial(uint64_t block, size_t at, size_t n, const unsigned char* src, unsigned rq_flags,
                                const char** why) {
  const uint64_t lbs = dev_.limits().logical_block_size;
  edge_.resize(lbs);
  iov_iter it;
  iov_iter_ubuf(&it, ITER_DEST, edge_.data(), lbs);
  blk_request rd{.op = REQ_OP_READ, .sector = (block * lbs) >> SECTOR_SHIFT, .iter = &it};
  if (int err = dev_.submit(rd)) {
    *why = rd.error;
    return err;
  }
  if (src)
    std::memcpy(edge_.data() + at, src, n);
  else
    std::memset(edge_.data() + at, 0, n);
  iov_iter_ubuf(&it, ITER_SOURCE, edge_.data(), lbs);
  blk_request wr{.op = REQ_OP_WRITE, .flags = rq_flags & REQ_FUA, .sector = rd.sector, .iter = &it};
  if (int err = dev_.submit(wr)) {
    *why = wr.error;
    return err;
  }
  return 0;
}

}  // namespace iov::nbd
