// position.hpp: moving an iterator without touching its data, and asking about
// its shape (the position half of the kernel's lib/iov_iter.c).
//
//   iov::iov_iter_state st;
//   iov::iov_iter_save_state(&it, &st);
//   iov::iov_iter_advance(&it, 512);
//   iov::iov_iter_restore(&it, &st);     // back where it was
//
// advance, truncate and save are inline (hot, small); the walks over segment
// arrays live in src/iov_iter.cc. Reverting past the start, and reexpanding
// beyond what the segments hold, are the kernel's BUG(): here they change
// nothing (and abort with IOV_CHECKS on).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "iov/config.hpp"
#include "iov/iov_iter.hpp"
#include "iov/page.hpp"

namespace iov {

// The kernel's cap on one read/write: INT_MAX rounded down to a page.
inline constexpr size_t MAX_RW_COUNT = INT_MAX & PAGE_MASK;

namespace internal {
// IOVEC and KVEC share a layout; advance within the segment array.
template <class Seg>
inline void advance_vec(iov_iter* i, const Seg*& segs, size_t size) {
  size += i->iov_offset;  // from the beginning of the current segment
  const Seg* p = segs;
  const Seg* end = p + i->nr_segs;
  for (; p < end; p++) {
    if (IOV_LIKELY(size < p->iov_len))
      break;
    size -= p->iov_len;
  }
  i->iov_offset = size;
  i->nr_segs -= p - segs;
  segs = p;
}

inline void advance_bvec(iov_iter* i, size_t size) {
  size += i->iov_offset;
  const bio_vec* p = i->bvec;
  const bio_vec* end = p + i->nr_segs;
  for (; p < end; p++) {
    if (IOV_LIKELY(size < p->bv_len))
      break;
    size -= p->bv_len;
  }
  i->iov_offset = size;
  i->nr_segs -= p - i->bvec;
  i->bvec = p;
}
}  // namespace internal

inline void iov_iter_advance(iov_iter* i, size_t size) {
  if (IOV_UNLIKELY(i->count < size))
    size = i->count;
  if (!size)
    return;
  switch (i->type) {
    case ITER_UBUF:
    case ITER_XARRAY:
      i->iov_offset += size;
      break;
    case ITER_IOVEC:
      internal::advance_vec(i, i->iov, size);
      break;
    case ITER_KVEC:
      internal::advance_vec(i, i->kvec, size);
      break;
    case ITER_BVEC:
      internal::advance_bvec(i, size);
      break;
    default:
      break;
  }
  i->count -= size;
}

void iov_iter_revert(iov_iter* i, size_t bytes);

inline void iov_iter_truncate(iov_iter* i, uint64_t count) {
  if (i->count > count)
    i->count = count;
}

void iov_iter_reexpand(iov_iter* i, size_t count);
size_t iov_iter_single_seg_count(const iov_iter* i);
int iov_iter_npages(const iov_iter* i, int maxpages);
unsigned long iov_iter_alignment(const iov_iter* i);
bool iov_iter_is_aligned(const iov_iter* i, unsigned addr_mask, unsigned len_mask);

inline void iov_iter_save_state(const iov_iter* i, iov_iter_state* state) {
  state->iov_offset = i->iov_offset;
  state->count = i->count;
  state->nr_segs = i->nr_segs;
}

// For UBUF, IOVEC, KVEC and BVEC; on XARRAY and DISCARD (the kernel warns) it
// changes nothing.
void iov_iter_restore(iov_iter* i, const iov_iter_state* state);

// *pages points to the caller's array of maxpages entries (or is nullptr: then
// an array is malloc()ed, to be freed with free(), as the kernel kvmallocs one).
// Nothing is pinned in user space; extraction_flags are accepted and ignored.
// Returns the bytes covered, *offset0 the offset into the first page, and
// advances; -EFAULT for DISCARD, -ENOMEM if an array cannot be allocated.
ssize_t iov_iter_extract_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages,
                               unsigned extraction_flags, size_t* offset0);

// The next pieces of *i as iovecs, for sendmsg()/writev()/io_uring: fills at
// most maxvecs entries covering at most maxsize bytes and returns how many
// (*bytes, when given, gets the bytes they cover). Pieces are the walk's (see
// iterate.hpp), with empty ones left out and neighbours that touch in memory
// merged, so a multi-page bvec of contiguous frames is one iovec. Does not
// advance: advance by what the system call took. DISCARD has no memory (0).
// The addresses of an XARRAY's pages stay valid only as long as the pages do.
unsigned iov_iter_to_iovecs(const iov_iter* i, ::iovec* vecs, unsigned maxvecs, size_t maxsize,
                            size_t* bytes = nullptr);

}  // namespace iov
