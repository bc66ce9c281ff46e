// block_shim.hpp: the few block-layer names a block driver's request path
// uses that iov does not model (struct bio and its disk, the request flags,
// bio_for_each_segment), so that driver code written in the kernel's C style
// compiles with iov:: in front of the names iov provides; the generic
// vocabulary (u32, likely, min_t, ...) comes from the installed
// iov/linux/kernel.hpp. Test-local: the smallest shapes the tests touch.
#pragma once

#include <cerrno>
#include <cstdint>

#include "iov/iov.hpp"
#include "iov/linux/kernel.hpp"

// The ports write the kernel's types unqualified, as a driver does.
using iov::u32;
using iov::u64;
using blk_opf_t = uint32_t;
using blk_status_t = uint8_t;

// include/linux/blkdev.h
#define PAGE_SECTORS_SHIFT (iov::PAGE_SHIFT - iov::SECTOR_SHIFT)
#define PAGE_SECTORS (1 << PAGE_SECTORS_SHIFT)

// include/linux/blk_types.h: the op in the low bits, flags above.
enum : blk_opf_t { REQ_OP_READ = 0, REQ_OP_WRITE = 1, REQ_OP_DISCARD = 3, REQ_OP_WRITE_ZEROES = 9 };
inline constexpr blk_opf_t REQ_OP_MASK = 0xff, REQ_NOWAIT = 1u << 21;
inline bool op_is_write(blk_opf_t op) { return op & 1; }
inline bool op_is_discard(blk_opf_t op) { return (op & REQ_OP_MASK) == REQ_OP_DISCARD; }
inline constexpr blk_status_t BLK_STS_OK = 0, BLK_STS_IOERR = 10, BLK_STS_AGAIN = 12;

// private_data is a void* that converts as C's does, so the driver's
// `struct ramdisk *rd = ...->private_data;` needs no cast.
struct gendisk {
  iov::void_ptr private_data;
};
struct block_device {
  gendisk* bd_disk;
};
struct bio {
  block_device* bi_bdev;
  blk_opf_t bi_opf;
  blk_status_t bi_status;
  bool bi_ended;
  iov::bvec_iter bi_iter;
  iov::bio_vec* bi_io_vec;
};

// include/linux/bio.h
inline iov::bio_vec bio_iter_iovec(const bio* b, iov::bvec_iter iter) { return iov::bvec_iter_bvec(b->bi_io_vec, iter); }
inline void bio_advance_iter_single(const bio* b, iov::bvec_iter* iter, unsigned bytes) {
  iter->bi_sector += bytes >> 9;
  iov::bvec_iter_advance_single(b->bi_io_vec, iter, bytes);
}
// bvl takes each single-page segment of the bio; iter is a copy, so the
// bio's own bi_iter is left as submitted.
#define bio_for_each_segment(bvl, bio, iter)                                     \
  for ((iter) = (bio)->bi_iter; (iter).bi_size && (((bvl) = bio_iter_iovec((bio), (iter))), 1); \
       bio_advance_iter_single((bio), &(iter), (bvl).bv_len))

inline blk_opf_t bio_op(const bio* b) { return b->bi_opf & REQ_OP_MASK; }

inline void bio_endio(bio* b) { b->bi_ended = true; }
inline void bio_io_error(bio* b) {
  b->bi_status = BLK_STS_IOERR;
  bio_endio(b);
}
inline void bio_wouldblock_error(bio* b) {
  b->bi_status = BLK_STS_AGAIN;
  bio_endio(b);
}
inline void cond_resched() {}
