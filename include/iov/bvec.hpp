// bvec.hpp: the bio_vec, a piece of memory named by its page (the kernel's
// include/linux/bvec.h).
//
// A bio_vec names a page, an offset into it and a length, and may run across
// several frames when they come from one alloc_pages() or from virt_to_page()
// of one contiguous buffer. A bvec_iter is a position in an array of them,
// walked a page-sized piece at a time:
//
//   iov::bio_vec bv;
//   iov::bvec_set_page(&bv, iov::alloc_page(), 4096, 0);
//   iov::bvec_iter it = {0, total, 0, 0}, pos;
//   iov::bio_vec piece;
//   for_each_bvec(piece, bvecs, pos, it) use(iov::bvec_virt(&piece), piece.bv_len);
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "iov/config.hpp"
#include "iov/folio.hpp"
#include "iov/highmem.hpp"
#include "iov/page.hpp"

namespace iov {

struct bio_vec {
  page* bv_page;
  unsigned bv_len;
  unsigned bv_offset;
};

inline void bvec_set_page(bio_vec* bv, page* p, unsigned len, unsigned offset) {
  bv->bv_page = p;
  bv->bv_len = len;
  bv->bv_offset = offset;
}

// bvec_set_folio: a bio_vec over `len` bytes of the folio from `offset`,
// named by the page that holds that offset. A len above UINT_MAX is the
// kernel's WARN: the bio_vec is left unset.
inline void bvec_set_folio(bio_vec* bv, folio* f, size_t len, size_t offset) {
  if (IOV_UNLIKELY(len > UINT_MAX))
    return;
  bvec_set_page(bv, folio_page(f, offset / PAGE_SIZE), static_cast<unsigned>(len),
                static_cast<unsigned>(offset % PAGE_SIZE));
}

// bvec_set_virt: a bio_vec over `len` bytes of contiguous memory at `vaddr`.
inline void bvec_set_virt(bio_vec* bv, void* vaddr, unsigned len) {
  bvec_set_page(bv, virt_to_page(vaddr), len, static_cast<unsigned>(offset_in_page(vaddr)));
}

// --- The rest of bvec.h: mapping a bio_vec, and struct bvec_iter ---------------

// The piece's address. Frames are contiguous, so bv_offset may reach past the
// first page, as in a kernel without highmem.
inline void_ptr bvec_virt(const bio_vec* bvec) { return page_address(bvec->bv_page) + bvec->bv_offset; }
inline void_ptr bvec_kmap_local(const bio_vec* bvec) {
  return kmap_local_page(bvec->bv_page) + bvec->bv_offset;
}
// bvec_kmap_partial (the v5 netfs series): maps the page that holds the byte
// at `offset` into the bvec, pointing at that byte; the caller keeps within
// the bvec. Unmap with kunmap_local().
inline void_ptr bvec_kmap_partial(const bio_vec* bvec, size_t offset) {
  offset += bvec->bv_offset;
  return kmap_local_page(bvec->bv_page + (offset >> PAGE_SHIFT)) + (offset & ~PAGE_MASK);
}
// The kernel's take char*; void* accepts what C callers pass.
inline void memcpy_from_bvec(void* to, const bio_vec* bvec) {
  std::memcpy(to, bvec_virt(bvec), bvec->bv_len);
}
inline void memcpy_to_bvec(const bio_vec* bvec, const void* from) {
  std::memcpy(bvec_virt(bvec), from, bvec->bv_len);
}
inline void memzero_bvec(const bio_vec* bvec) { std::memset(bvec_virt(bvec), 0, bvec->bv_len); }

using sector_t = uint64_t;

// A position in an array of bio_vecs that the array itself does not record:
// the block layer's cursor over a bio (bio->bi_iter), kept apart from the
// bvecs so that a bio can be split and cloned by copying it.
//
// Linux 7.3 renamed bi_bvec_done to bi_offset (commit b539aeacf8cc); both
// name the one field here, so that code ported from either side compiles,
// designated initialisers included. The union's members have the same type,
// and GCC and Clang define reading the one not last written.
struct bvec_iter {
  sector_t bi_sector;    // device address in 512-byte sectors
  unsigned int bi_size;  // residual I/O count
  unsigned int bi_idx;   // current index into the bvec array
  union {
    unsigned int bi_offset;     // bytes completed in the current bvec (7.3)
    unsigned int bi_bvec_done;  // its name before 7.3
  };
} __attribute__((packed, aligned(4)));

// The kernel's macros, as functions of (bvec array, iterator). The mp_ forms
// describe the rest of the current (possibly multi-page) bvec; the others cut
// it at the page boundary, as the block layer hands pages to drivers.
inline const bio_vec* __bvec_iter_bvec(const bio_vec* bvec, bvec_iter iter) { return &bvec[iter.bi_idx]; }
inline page* mp_bvec_iter_page(const bio_vec* bvec, bvec_iter iter) { return __bvec_iter_bvec(bvec, iter)->bv_page; }
inline unsigned mp_bvec_iter_len(const bio_vec* bvec, bvec_iter iter) {
  unsigned rest = __bvec_iter_bvec(bvec, iter)->bv_len - iter.bi_offset;
  return iter.bi_size < rest ? iter.bi_size : rest;
}
inline unsigned mp_bvec_iter_offset(const bio_vec* bvec, bvec_iter iter) {
  return __bvec_iter_bvec(bvec, iter)->bv_offset + iter.bi_offset;
}
inline unsigned mp_bvec_iter_page_idx(const bio_vec* bvec, bvec_iter iter) {
  return mp_bvec_iter_offset(bvec, iter) / PAGE_SIZE;
}
inline bio_vec mp_bvec_iter_bvec(const bio_vec* bvec, bvec_iter iter) {
  return {mp_bvec_iter_page(bvec, iter), mp_bvec_iter_len(bvec, iter), mp_bvec_iter_offset(bvec, iter)};
}
inline unsigned bvec_iter_offset(const bio_vec* bvec, bvec_iter iter) {
  return mp_bvec_iter_offset(bvec, iter) % PAGE_SIZE;
}
inline unsigned bvec_iter_len(const bio_vec* bvec, bvec_iter iter) {
  unsigned len = mp_bvec_iter_len(bvec, iter), room = PAGE_SIZE - bvec_iter_offset(bvec, iter);
  return len < room ? len : room;
}
inline page* bvec_iter_page(const bio_vec* bvec, bvec_iter iter) {
  return mp_bvec_iter_page(bvec, iter) + mp_bvec_iter_page_idx(bvec, iter);
}
inline bio_vec bvec_iter_bvec(const bio_vec* bvec, bvec_iter iter) {
  return {bvec_iter_page(bvec, iter), bvec_iter_len(bvec, iter), bvec_iter_offset(bvec, iter)};
}

// Advances past bytes. Past the end is the kernel's WARN_ONCE: the iterator is
// emptied (bi_size = 0) and false returned; it never aborts. As the kernel's,
// empty bvecs are stepped over only while bytes remain to skip.
inline bool bvec_iter_advance(const bio_vec* bv, bvec_iter* iter, unsigned bytes) {
  unsigned idx = iter->bi_idx;
  if (IOV_UNLIKELY(bytes > iter->bi_size)) {
    iter->bi_size = 0;
    return false;
  }
  iter->bi_size -= bytes;
  bytes += iter->bi_offset;
  while (bytes && bytes >= bv[idx].bv_len) {
    bytes -= bv[idx].bv_len;
    idx++;
  }
  iter->bi_idx = idx;
  iter->bi_offset = bytes;
  return true;
}

// bytes must not run past the current bvec.
inline void bvec_iter_advance_single(const bio_vec* bv, bvec_iter* iter, unsigned bytes) {
  unsigned done = iter->bi_offset + bytes;
  if (done == bv[iter->bi_idx].bv_len) {
    done = 0;
    iter->bi_idx++;
  }
  iter->bi_offset = done;
  iter->bi_size -= bytes;
}

// For iterating one bio from start to end.
inline constexpr bvec_iter BVEC_ITER_ALL_INIT = {0, UINT_MAX, 0, {0}};

}  // namespace iov

// for_each_bvec(bvl, bio_vec, iter, start): bvl (a bio_vec) takes each
// single-page piece of the array from the position `start` on.
#define for_each_bvec(bvl, bio_vec, iter, start)                                         \
  for ((iter) = (start); (iter).bi_size && (((bvl) = ::iov::bvec_iter_bvec((bio_vec), (iter))), 1); \
       ::iov::bvec_iter_advance_single((bio_vec), &(iter), (bvl).bv_len))
