// iterate.hpp: walking an iov_iter piece by piece (the kernel's
// include/linux/iov_iter.h) — the heart of the library.
//
//   size_t n = iov::iterate_and_advance(&it, len, dst,
//       [](void* base, size_t progress, size_t len, void* priv, void*) -> size_t {
//         memcpy(static_cast<char*>(priv) + progress, base, len);
//         return 0;  // bytes NOT processed
//       },
//       /* step for kernel-backed types */ ...);
//
// The two step typedefs come first, then one walk per iterator type, all of
// one shape, then iterate_and_advance2(), whose comment states the contract
// once. The templates inline their steps (a lambda becomes straight-line code
// in the loop); generic_iterate() is the same walk compiled once in src/ and
// calling its steps through their pointers. How operations choose a walk is
// in internal/walk.hpp.
#pragma once

#include <algorithm>
#include <cstddef>

#include "iov/bvec.hpp"
#include "iov/bvecq.hpp"
#include "iov/config.hpp"
#include "iov/folio_queue.hpp"
#include "iov/highmem.hpp"
#include "iov/iov_iter.hpp"
#include "iov/page.hpp"
#include "iov/rcu.hpp"
#include "iov/xarray.hpp"

namespace iov {

using iov_step_f = size_t (*)(void* iter_base, size_t progress, size_t len, void* priv, void* priv2);
using iov_ustep_f = size_t (*)(void* iter_base, size_t progress, size_t len, void* priv, void* priv2);

namespace internal {
// What every typed walk checks first: the iterator's type (a programming
// error: nothing is processed, or an abort with IOV_CHECKS on) and len, clamped
// to the count; false when there is nothing to do.
IOV_ALWAYS_INLINE bool walk_begin(const iov_iter* iter, iter_type type, size_t& len,
                                  [[maybe_unused]] const char* what) {
  if (IOV_BUG_ON(iter->type != type, what))
    return false;
  if (IOV_UNLIKELY(iter->count < len))
    len = iter->count;
  return len != 0;
}

// Runs the step over one piece at base. The piece is counted into progress
// and skip before the call and what the step leaves is given back after it:
// with the bytes left taken as len - progress, only the walk's position
// stays live across the call, and nothing goes through the stack between
// pieces. Returns whether the step took the whole piece.
template <class Step>
IOV_ALWAYS_INLINE bool step_piece(Step& step, char* base, size_t part, size_t& progress, size_t& skip, void* priv,
                                  void* priv2) {
  size_t at = progress;
  progress += part;
  skip += part;
  size_t remain = step(base, at, part, priv, priv2);
  if (IOV_LIKELY(!remain))
    return true;
  progress -= remain;
  skip -= remain;
  return false;
}

// Handle ITER_IOVEC and ITER_KVEC: segments of base and length (seg_traits).
template <class Seg, class Step>
IOV_ALWAYS_INLINE size_t walk_segs(iov_iter* iter, size_t len, void* priv, void* priv2, Step&& step) {
  const Seg*& segs = iter_segs<Seg>(iter);
  const Seg* p = segs;
  size_t progress = 0, skip = iter->iov_offset;
  do {
    size_t part = std::min(len - progress, p->iov_len - skip);
    if (IOV_LIKELY(part)) {
      if (!step_piece(step, static_cast<char*>(p->iov_base) + skip, part, progress, skip, priv, priv2))
        break;
      if (skip < p->iov_len)
        break;
    }
    p++;
    skip = 0;
  } while (progress != len);
  iter->nr_segs -= static_cast<unsigned long>(p - segs);
  segs = p;
  iter->iov_offset = skip;
  iter->count -= progress;
  return progress;
}
}  // namespace internal

// Handle ITER_UBUF.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_ubuf(iov_iter* iter, size_t len, void* priv, void* priv2, Step&& step) {
  if (!internal::walk_begin(iter, ITER_UBUF, len, "iterate_ubuf: iterator of another type"))
    return 0;
  char* base = static_cast<char*>(iter->ubuf);
  size_t remain = step(base + iter->iov_offset, 0, len, priv, priv2);
  size_t progress = len - remain;
  iter->iov_offset += progress;
  iter->count -= progress;
  return progress;
}

// Handle ITER_IOVEC.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_iovec(iov_iter* iter, size_t len, void* priv, void* priv2, Step&& step) {
  if (!internal::walk_begin(iter, ITER_IOVEC, len, "iterate_iovec: iterator of another type"))
    return 0;
  return internal::walk_segs<::iovec>(iter, len, priv, priv2, step);
}

// Handle ITER_KVEC.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_kvec(iov_iter* iter, size_t len, void* priv, void* priv2, Step&& step) {
  if (!internal::walk_begin(iter, ITER_KVEC, len, "iterate_kvec: iterator of another type"))
    return 0;
  return internal::walk_segs<kvec>(iter, len, priv, priv2, step);
}

// Handle ITER_BVEC: a piece never crosses a page.
//
// From the start of a bvec, a run of whole bvecs that each lie within one page
// (a bio of page-sized bvecs, the common shape) goes through a shorter loop:
// each is one piece, exactly as the general loop would cut it (frames are
// contiguous, so page_address(bv_page) + bv_offset is the address the general
// loop maps). After a memcpy/memset of a page, which the CPU may run as a
// microcoded string operation, the instructions between steps are not hidden:
// the short loop saves ~3% of a zero-fill of 4 KiB bvecs.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_bvec(iov_iter* iter, size_t len, void* priv, void* priv2, Step&& step) {
  if (!internal::walk_begin(iter, ITER_BVEC, len, "iterate_bvec: iterator of another type"))
    return 0;
  const bio_vec* p = iter->bvec;
  size_t progress = 0, skip = iter->iov_offset;
  if (skip == 0) {
    // The bytes left are len - progress, and progress counts the piece
    // before its step runs: only the walk's own position (p, progress) stays
    // live across the step call, and nothing goes through the stack.
    for (;;) {
      size_t bv_len = p->bv_len, bv_offset = p->bv_offset;
      if (bv_len > len - progress || offset_in_page(bv_offset) + bv_len > PAGE_SIZE)
        break;
      size_t at = progress;
      progress += bv_len;
      size_t remain = step(static_cast<char*>(page_address(p->bv_page)) + bv_offset, at, bv_len, priv, priv2);
      if (IOV_UNLIKELY(remain)) {
        skip = p->bv_len - remain;
        progress -= remain;
        goto done;
      }
      p++;
      if (progress == len)
        goto done;
    }
    len -= progress;
  }
  do {
    size_t offset = p->bv_offset + skip;
    char* kaddr = static_cast<char*>(kmap_local_page(p->bv_page + offset / PAGE_SIZE));
    size_t part = std::min({len, size_t{p->bv_len} - skip, PAGE_SIZE - offset % PAGE_SIZE});
    size_t remain = step(kaddr + offset % PAGE_SIZE, progress, part, priv, priv2);
    kunmap_local(kaddr);
    size_t consumed = part - remain;
    len -= consumed;
    progress += consumed;
    skip += consumed;
    if (skip >= p->bv_len) {
      skip = 0;
      p++;
    }
    if (remain)
      break;
  } while (len);
done:
  iter->nr_segs -= static_cast<unsigned long>(p - iter->bvec);
  iter->bvec = p;
  iter->iov_offset = skip;
  iter->count -= progress;
  return progress;
}

// Handle ITER_BVECQ: a piece never crosses a page. A finished segment hands
// over to ->next; the walk ends early at the end of the queue (the count is
// the caller's word). Empty slots are stepped over without a step call.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_bvecq(iov_iter* iter, size_t len, void* priv, void* priv2, Step&& step) {
  if (!internal::walk_begin(iter, ITER_BVECQ, len, "iterate_bvecq: iterator of another type"))
    return 0;
  const bvecq* bq = iter->bvecq;
  unsigned slot = iter->bvecq_slot;
  size_t progress = 0, skip = iter->iov_offset;
  // One piece a pass (step_piece), never more than a page: a slot that
  // spans pages is entered again for each. From the start of a slot, a run
  // of whole slots that each lie within one page takes a shorter loop, which
  // holds only its slot's address, the segment, progress and len across the
  // step call (the general pass would cut each of them as one piece too).
  do {
    if (skip == 0) {
      const bio_vec* bv = bq->bv + slot;
      const bio_vec* const end = bq->bv + bq->nr_slots;
      for (; bv < end; bv++) {
        size_t bv_len = bv->bv_len, bv_offset = bv->bv_offset;
        page* pg = bv->bv_page;
        // iterate_bvec's test, written out again: made one inline function
        // for both, it led GCC 12 to keep progress on the stack in this loop.
        if (!bv_len || bv_len > len - progress || offset_in_page(bv_offset) + bv_len > PAGE_SIZE || !pg)
          break;
        size_t at = progress;
        progress += bv_len;
        size_t remain = step(static_cast<char*>(page_address(pg)) + bv_offset, at, bv_len, priv, priv2);
        if (IOV_UNLIKELY(remain)) {
          progress -= remain;
          skip = bv->bv_len - remain;
          slot = static_cast<unsigned>(bv - bq->bv);
          goto stop;
        }
        if (progress == len) {
          skip = bv->bv_len;
          slot = static_cast<unsigned>(bv - bq->bv);
          goto stop;
        }
      }
      slot = static_cast<unsigned>(bv - bq->bv);
    }
    if (slot >= bq->nr_slots) {
      if (!bvecq_next_slot(&bq, &slot))
        break;
      continue;
    }
    const bio_vec* bv = &bq->bv[slot];
    if (skip < bv->bv_len) {  // the caller vouches for bv_page only where bv_len > 0
      // The v5 walk rule: a slot with a length names a page (a programming
      // error otherwise; unchecked, the walk ends before it).
      if (IOV_BUG_ON(!bv->bv_page, "iterate_bvecq: a slot with a length and no page"))
        goto stop;
      size_t off = bv->bv_offset + skip;
      size_t part = std::min({size_t{bv->bv_len} - skip, len - progress, PAGE_SIZE - off % PAGE_SIZE});
      char* base = static_cast<char*>(kmap_local_page(bv->bv_page + off / PAGE_SIZE)) + off % PAGE_SIZE;
      bool whole = internal::step_piece(step, base, part, progress, skip, priv, priv2);
      kunmap_local(base);
      if (!whole || progress == len)
        goto stop;
      if (skip < bv->bv_len)
        continue;  // the slot's next page
    }
    skip = 0;
    slot++;
  } while (progress != len);
stop:
  iter->bvecq_slot = static_cast<uint16_t>(slot);
  iter->bvecq = bq;
  iter->iov_offset = skip;
  iter->count -= progress;
  return progress;
}

// Handle ITER_FOLIOQ: a piece never crosses a page. The iterator may stand on
// slot folioq_nr_slots() (the queue was extended since); a slot without a
// folio ends the walk. Where the kernel would run off the queue (no next
// segment), the walk ends instead.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_folioq(iov_iter* iter, size_t len, void* priv, void* priv2, Step&& step) {
  if (!internal::walk_begin(iter, ITER_FOLIOQ, len, "iterate_folioq: iterator of another type"))
    return 0;
  const folio_queue* folioq = iter->folioq;
  unsigned slot = iter->folioq_slot;
  size_t progress = 0, skip = iter->iov_offset;
  if (slot == folioq_nr_slots(folioq) && folioq->next) {
    folioq = folioq->next;
    slot = 0;
  }
  // One piece a pass (step_piece); the folio's size is read again after the
  // step rather than held across it. From the start of a slot, a run of
  // whole order-0 folios takes a shorter loop that holds only the segment,
  // the slot, progress and len across the step call (the general pass would
  // cut each of them as one piece too).
  do {
    if (skip == 0) {
      while (slot < folioq_nr_slots(folioq)) {
        folio* f = folioq_folio(folioq, slot);
        if (!f || folioq_folio_order(folioq, slot) != 0 || PAGE_SIZE > len - progress)
          break;
        size_t at = progress;
        progress += PAGE_SIZE;
        size_t remain = step(folio_address(f), at, PAGE_SIZE, priv, priv2);
        if (IOV_UNLIKELY(remain)) {
          progress -= remain;
          skip = PAGE_SIZE - remain;
          goto stop;
        }
        if (progress == len) {
          skip = PAGE_SIZE;  // the general pass below moves past the folio
          break;
        }
        if (++slot == folioq_nr_slots(folioq) && folioq->next) {
          folioq = folioq->next;
          slot = 0;
        }
      }
    }
    if (slot >= folioq_nr_slots(folioq))
      break;
    folio* f = folioq_folio(folioq, slot);
    if (!f)
      break;
    if (skip < folioq_folio_size(folioq, slot)) {
      char* base = static_cast<char*>(kmap_local_folio(f, skip));
      bool whole = internal::step_piece(step, base, std::min(len - progress, PAGE_SIZE - skip % PAGE_SIZE), progress,
                                        skip, priv, priv2);
      kunmap_local(base);
      if (!whole)
        break;
    }
    if (skip >= folioq_folio_size(folioq, slot)) {
      skip = 0;
      slot++;
      if (slot == folioq_nr_slots(folioq) && folioq->next) {
        folioq = folioq->next;
        slot = 0;
      }
    }
  } while (progress != len);
stop:
  iter->folioq_slot = static_cast<uint8_t>(slot);
  iter->folioq = folioq;
  iter->iov_offset = skip;
  iter->count -= progress;
  return progress;
}

// Handle ITER_XARRAY: one page per index; a missing index ends the walk (the
// kernel skips holes). The RCU read side keeps the tree's nodes alive.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_xarray(iov_iter* iter, size_t len, void* priv, void* priv2, Step&& step) {
  if (!internal::walk_begin(iter, ITER_XARRAY, len, "iterate_xarray: iterator of another type"))
    return 0;
  size_t progress = 0;
  size_t start = static_cast<size_t>(iter->xarray_start) + iter->iov_offset;
  unsigned long index = start >> PAGE_SHIFT;
  size_t offset = start & (PAGE_SIZE - 1);
  rcu_read_guard rcu;
  XA_STATE(xas, iter->xarray, index);
  // As in iterate_bvec: the piece is counted before its step runs and the
  // bytes left are len - progress, so that what stays live across the step
  // call (the state, progress, len and the step's arguments) fits in the
  // callee-saved registers, with no stack round trip between pieces.
  for (page* pg = static_cast<page*>(xas_load(&xas)); pg; pg = static_cast<page*>(xas_next(&xas))) {
    size_t part = std::min(len - progress, PAGE_SIZE - offset);
    char* base = static_cast<char*>(kmap_local_page(pg));
    size_t at = progress;
    progress += part;
    size_t remain = step(base + offset, at, part, priv, priv2);
    kunmap_local(base);
    if (IOV_UNLIKELY(remain)) {
      progress -= remain;
      break;
    }
    if (progress == len)
      break;
    offset = 0;
  }
  iter->iov_offset += progress;
  iter->count -= progress;
  return progress;
}

// Handle ITER_DISCARD: no memory, no step to call; just count.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_discard(iov_iter* iter, size_t len, void*, void*, Step&&) {
  if (!internal::walk_begin(iter, ITER_DISCARD, len, "iterate_discard: iterator of another type"))
    return 0;
  iter->count -= len;
  return len;
}

// iterate_and_advance2 - walk an iterator and advance it past what was processed
// @iter: the iterator
// @len: bytes to process, clamped to iov_iter_count(iter)
// @priv, @priv2: passed to every step unchanged
// @ustep: the step for user-backed types (UBUF, IOVEC)
// @step: the step for the rest (KVEC, BVEC, BVECQ, FOLIOQ, XARRAY); DISCARD
//        calls neither
//
// A step is called once per contiguous piece (never crossing a page for BVEC,
// BVECQ, FOLIOQ and XARRAY; zero-length IOVEC/KVEC/BVECQ segments are
// skipped, a zero-length BVEC may reach the step with len 0) as
// step(base, progress, len, priv, priv2),
// where progress counts the bytes already processed in this call. It returns
// the bytes it did NOT process (0: all); a short step ends the walk. The
// iterator ends advanced by exactly the bytes processed, which is also the
// return value. The iterate_<type>() walks above are the same for callers
// that know their iterator's type; on an iterator of another type they
// process nothing (and abort with IOV_CHECKS on).
template <class UStep, class Step>
IOV_ALWAYS_INLINE size_t iterate_and_advance2(iov_iter* iter, size_t len, void* priv, void* priv2, UStep&& ustep,
                                              Step&& step) {
  switch (iter->type) {
    case ITER_UBUF:
      return iterate_ubuf(iter, len, priv, priv2, ustep);
    case ITER_IOVEC:
      return iterate_iovec(iter, len, priv, priv2, ustep);
    case ITER_BVEC:
      return iterate_bvec(iter, len, priv, priv2, step);
    case ITER_KVEC:
      return iterate_kvec(iter, len, priv, priv2, step);
    case ITER_BVECQ:
      return iterate_bvecq(iter, len, priv, priv2, step);
    case ITER_FOLIOQ:
      return iterate_folioq(iter, len, priv, priv2, step);
    case ITER_XARRAY:
      return iterate_xarray(iter, len, priv, priv2, step);
    default:
      return iterate_discard(iter, len, priv, priv2, step);
  }
}

template <class UStep, class Step>
IOV_ALWAYS_INLINE size_t iterate_and_advance(iov_iter* iter, size_t len, void* priv, UStep&& ustep, Step&& step) {
  return iterate_and_advance2(iter, len, priv, nullptr, ustep, step);
}

// For steps that only touch kernel-backed memory. Mainline falls through to the
// discard walk on a user-backed iterator and silently drops the data; here a
// user-backed iterator processes nothing and returns 0.
template <class Step>
IOV_ALWAYS_INLINE size_t iterate_and_advance_kernel(iov_iter* iter, size_t len, void* priv, void* priv2,
                                                    Step&& step) {
  if (user_backed_iter(iter))
    return 0;
  return iterate_and_advance2(iter, len, priv, priv2, step, step);
}

// The same walk as iterate_and_advance2, compiled once in src/generic_iterate.cc
// and never inlined into callers: the steps are called through their pointers,
// once per piece.
size_t generic_iterate(iov_iter* iter, size_t len, void* priv, void* priv2, iov_ustep_f ustep, iov_step_f step);

}  // namespace iov
