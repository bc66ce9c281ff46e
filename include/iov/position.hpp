// position.hpp: moving an iterator without touching its data, and asking about
// its shape (the position half of the kernel's lib/iov_iter.c).
//
//   iov::iov_iter_state st;
//   iov::iov_iter_save_state(&it, &st);
//   iov::iov_iter_advance(&it, 512);
//   iov::iov_iter_restore(&it, &st);     // back where it was
//
// Each operation is written once for the three segment arrays (IOVEC, KVEC,
// BVEC) through internal::seg_traits; the two queues (BVECQ, FOLIOQ) have
// theirs in internal/bvecq_position.hpp and internal/folioq_position.hpp.
// Reverting past the start (for a queue, its head), and reexpanding beyond
// what the segments hold, are the kernel's BUG(): here they change nothing
// (and abort with IOV_CHECKS on).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "iov/config.hpp"
#include "iov/internal/bvecq_position.hpp"
#include "iov/internal/folioq_position.hpp"
#include "iov/iov_iter.hpp"
#include "iov/page.hpp"

namespace iov {

// The kernel's cap on one read/write: INT_MAX rounded down to a page.
inline constexpr size_t MAX_RW_COUNT = INT_MAX & PAGE_MASK;

namespace internal {
inline size_t div_round_up(size_t n, size_t d) { return (n + d - 1) / d; }

// The kernel's iov_iter_iovec_advance()/iov_iter_bvec_advance(): as theirs,
// an advance by 0 still steps over empty segments at the front.
template <class Seg>
inline void advance_segs(iov_iter* i, size_t size) {
  using T = seg_traits<Seg>;
  if (!i->count)
    return;
  i->count -= size;
  size += i->iov_offset;  // from the beginning of the current segment
  const Seg*& segs = iter_segs<Seg>(i);
  const Seg* p = segs;
  const Seg* end = p + i->nr_segs;
  for (; p < end; p++) {
    if (IOV_LIKELY(size < T::len(*p)))
      break;
    size -= T::len(*p);
  }
  i->iov_offset = size;
  i->nr_segs -= static_cast<unsigned long>(p - segs);
  segs = p;
}

// Walks back over whole segments; refuses (returns false, nothing changed)
// when the segments behind the current one hold fewer than unroll bytes.
template <class Seg>
inline bool revert_segs(iov_iter* i, size_t unroll) {
  using T = seg_traits<Seg>;
  const Seg*& segs = iter_segs<Seg>(i);
  const Seg* origin = static_cast<const Seg*>(i->segs_origin);
  size_t behind = 0;
  for (const Seg* p = segs; p > origin && behind < unroll;)
    behind += T::len(*--p);
  if (IOV_BUG_ON(behind < unroll, "iov_iter_revert: past the start of the segments"))
    return false;
  const Seg* p = segs;
  for (;;) {
    size_t n = T::len(*--p);
    i->nr_segs++;
    if (unroll <= n) {
      segs = p;
      i->iov_offset = n - unroll;
      return true;
    }
    unroll -= n;
  }
}

// Bytes the segments hold from the current position on.
template <class Seg>
inline size_t segs_left(const iov_iter* i) {
  const Seg* p = iter_segs<Seg>(i);
  size_t total = 0;
  for (unsigned long k = 0; k < i->nr_segs; k++)
    total += seg_traits<Seg>::len(p[k]);
  return total - i->iov_offset;
}

// f(start, len) for each segment from the current one on until the next count
// bytes are covered, start as seg_traits::start plus the offset into the
// segment, len clamped to what is left of count; f returns false to stop (and
// then so does this). As the kernel's loops: at least one segment is visited
// (the caller makes sure there is one), and with SkipEmpty a segment with
// nothing left in it is not.
template <class Seg, bool SkipEmpty, class F>
inline bool for_each_seg(const iov_iter* i, F&& f) {
  using T = seg_traits<Seg>;
  size_t size = i->count, skip = i->iov_offset;
  const Seg* p = iter_segs<Seg>(i);
  do {
    size_t len = T::len(*p) - skip;
    if (!SkipEmpty || len) {
      len = std::min(len, size);
      if (!f(T::start(*p) + skip, len))
        return false;
      size -= len;
    }
    p++;
    skip = 0;
  } while (size);
  return true;
}

template <class Seg>
inline int segs_npages(const iov_iter* i, int maxpages) {
  size_t npages = 0;
  bool whole = for_each_seg<Seg, seg_traits<Seg>::skips_empty>(i, [&](unsigned long start, size_t len) {
    npages += div_round_up(offset_in_page(start) + len, PAGE_SIZE);
    return npages <= static_cast<size_t>(maxpages);
  });
  return whole ? static_cast<int>(npages) : maxpages;
}
}  // namespace internal

inline void iov_iter_advance(iov_iter* i, size_t size) {
  if (IOV_UNLIKELY(i->count < size))
    size = i->count;
  switch (i->type) {
    case ITER_UBUF:
    case ITER_XARRAY:
      i->iov_offset += size;
      i->count -= size;
      break;
    case ITER_IOVEC:
      internal::advance_segs<::iovec>(i, size);
      break;
    case ITER_KVEC:
      internal::advance_segs<kvec>(i, size);
      break;
    case ITER_BVEC:
      internal::advance_segs<bio_vec>(i, size);
      break;
    case ITER_BVECQ:
      internal::bvecq_advance(i, size);
      break;
    case ITER_FOLIOQ:
      internal::folioq_advance(i, size);
      break;
    default:
      i->count -= size;
      break;
  }
}

inline void iov_iter_revert(iov_iter* i, size_t unroll) {
  if (!unroll || unroll > MAX_RW_COUNT)  // the kernel WARNs on the latter
    return;
  if (iov_iter_is_discard(i)) {
    i->count += unroll;
    return;
  }
  if (unroll <= i->iov_offset) {
    i->iov_offset -= unroll;
    i->count += unroll;
    return;
  }
  size_t rest = unroll - i->iov_offset;
  bool ok;
  switch (i->type) {
    case ITER_IOVEC:
      ok = internal::revert_segs<::iovec>(i, rest);
      break;
    case ITER_KVEC:
      ok = internal::revert_segs<kvec>(i, rest);
      break;
    case ITER_BVEC:
      ok = internal::revert_segs<bio_vec>(i, rest);
      break;
    case ITER_BVECQ:
      ok = internal::bvecq_revert(i, rest);
      break;
    case ITER_FOLIOQ:
      ok = internal::folioq_revert(i, rest);
      break;
    default:  // UBUF, XARRAY: never stray before the start of the range
      ok = !IOV_BUG_ON(true, "iov_iter_revert: past the start of the buffer");
      break;
  }
  if (ok)
    i->count += unroll;
}

inline void iov_iter_truncate(iov_iter* i, uint64_t count) {
  if (i->count > count)
    i->count = count;
}

inline void iov_iter_reexpand(iov_iter* i, size_t count) {
  size_t capacity;
  switch (i->type) {
    case ITER_IOVEC:
      capacity = internal::segs_left<::iovec>(i);
      break;
    case ITER_KVEC:
      capacity = internal::segs_left<kvec>(i);
      break;
    case ITER_BVEC:
      capacity = internal::segs_left<bio_vec>(i);
      break;
    case ITER_BVECQ:
      capacity = internal::bvecq_ahead(i, count);
      break;
    case ITER_FOLIOQ:
      capacity = internal::folioq_ahead(i, count);
      break;
    case ITER_DISCARD:
      capacity = SIZE_MAX;
      break;
    default:
      capacity = i->orig_count - i->iov_offset;
      break;
  }
  if (IOV_BUG_ON(count > capacity, "iov_iter_reexpand: beyond what the segments hold"))
    return;
  i->count = count;
}

inline size_t iov_iter_single_seg_count(const iov_iter* i) {
  if (i->nr_segs > 1) {
    switch (i->type) {
      case ITER_IOVEC:
        return std::min(i->count, i->iov->iov_len - i->iov_offset);
      case ITER_KVEC:
        return std::min(i->count, i->kvec->iov_len - i->iov_offset);
      case ITER_BVEC:
        return std::min(i->count, size_t{i->bvec->bv_len} - i->iov_offset);
      default:
        break;
    }
  }
  if (IOV_UNLIKELY(iov_iter_is_bvecq(i)))
    return internal::bvecq_single_seg_count(i);
  if (IOV_UNLIKELY(iov_iter_is_folioq(i)))
    return internal::folioq_single_seg_count(i);
  return i->count;
}

inline int iov_iter_npages(const iov_iter* i, int maxpages) {
  if (IOV_UNLIKELY(!i->count) || maxpages <= 0)
    return 0;
  size_t linear_start;
  switch (i->type) {
    case ITER_UBUF:
      linear_start = reinterpret_cast<uintptr_t>(i->ubuf) + i->iov_offset;
      break;
    case ITER_XARRAY:
      linear_start = static_cast<size_t>(i->xarray_start) + i->iov_offset;
      break;
    case ITER_IOVEC:
      return internal::segs_npages<::iovec>(i, maxpages);
    case ITER_KVEC:
      return internal::segs_npages<kvec>(i, maxpages);
    case ITER_BVEC:
      return internal::segs_npages<bio_vec>(i, maxpages);
    case ITER_BVECQ:
      return internal::bvecq_npages(i, maxpages);
    case ITER_FOLIOQ:
      return internal::folioq_npages(i, maxpages);
    default:
      return 0;
  }
  size_t npages = internal::div_round_up(offset_in_page(linear_start) + i->count, PAGE_SIZE);
  return npages < static_cast<size_t>(maxpages) ? static_cast<int>(npages) : maxpages;
}

namespace internal {
template <class Seg>
inline unsigned long segs_alignment(const iov_iter* i) {
  unsigned long res = 0;
  if (i->nr_segs)
    for_each_seg<Seg, seg_traits<Seg>::skips_empty>(i, [&](unsigned long start, size_t len) {
      res |= start | len;
      return true;
    });
  return res;
}

template <class Seg>
inline bool segs_aligned(const iov_iter* i, unsigned addr_mask, unsigned len_mask) {
  return !i->nr_segs || for_each_seg<Seg, false>(i, [&](unsigned long start, size_t len) {
    return !(len & len_mask) && !(start & addr_mask);
  });
}
}  // namespace internal

inline unsigned long iov_iter_alignment(const iov_iter* i) {
  switch (i->type) {
    case ITER_UBUF:
      return i->count ? (reinterpret_cast<unsigned long>(i->ubuf) + i->iov_offset) | i->count : 0;
    case ITER_IOVEC:
      return internal::segs_alignment<::iovec>(i);
    case ITER_KVEC:
      return internal::segs_alignment<kvec>(i);
    case ITER_BVEC:
      return internal::segs_alignment<bio_vec>(i);
    case ITER_BVECQ:
      return internal::bvecq_alignment(i);
    case ITER_FOLIOQ:  // whole folios
      return internal::folioq_alignment(i);
    case ITER_XARRAY:  // whole pages
      return (static_cast<unsigned long>(i->xarray_start) + i->iov_offset) | i->count;
    default:
      return 0;
  }
}

inline bool iov_iter_is_aligned(const iov_iter* i, unsigned addr_mask, unsigned len_mask) {
  switch (i->type) {
    case ITER_UBUF:
      return !(i->count & len_mask) && !((reinterpret_cast<unsigned long>(i->ubuf) + i->iov_offset) & addr_mask);
    case ITER_IOVEC:
      return internal::segs_aligned<::iovec>(i, addr_mask, len_mask);
    case ITER_KVEC:
      return internal::segs_aligned<kvec>(i, addr_mask, len_mask);
    case ITER_BVEC:
      return internal::segs_aligned<bio_vec>(i, addr_mask, len_mask);
    case ITER_BVECQ:
      return internal::bvecq_is_aligned(i, addr_mask, len_mask);
    case ITER_FOLIOQ:
      return internal::folioq_is_aligned(i, addr_mask, len_mask);
    case ITER_XARRAY:
      return !(i->count & len_mask) && !((static_cast<unsigned long>(i->xarray_start) + i->iov_offset) & addr_mask);
    default:
      return true;
  }
}

inline void iov_iter_save_state(const iov_iter* i, iov_iter_state* state) {
  state->iov_offset = i->iov_offset;
  state->count = i->count;
  state->nr_segs = i->nr_segs;
}

// For UBUF, IOVEC, KVEC and BVEC; on BVECQ, FOLIOQ, XARRAY and DISCARD (the
// kernel warns) it changes nothing.
inline void iov_iter_restore(iov_iter* i, const iov_iter_state* state) {
  // nr_segs + the segment pointer is constant; signed, as a state may also
  // have been saved ahead of where the iterator now stands.
  const ptrdiff_t back = static_cast<ptrdiff_t>(state->nr_segs) - static_cast<ptrdiff_t>(i->nr_segs);
  switch (i->type) {
    case ITER_UBUF:
      break;
    case ITER_BVEC:
      i->bvec -= back;
      break;
    case ITER_IOVEC:
      i->iov -= back;
      break;
    case ITER_KVEC:
      i->kvec -= back;
      break;
    default:  // BVECQ, FOLIOQ, XARRAY, DISCARD: the kernel warns and does nothing
      return;
  }
  i->iov_offset = state->iov_offset;
  i->count = state->count;
  if (!iter_is_ubuf(i))
    i->nr_segs = state->nr_segs;
}

// --- npages with a byte cap, and the gap alignment (uio.h, lib/iov_iter.c) ------

// iov_iter_npages() of the first max_bytes only; the count is restored after.
inline int iov_iter_npages_cap(iov_iter* i, int maxpages, size_t max_bytes) {
  size_t shorted = 0;
  if (iov_iter_count(i) > max_bytes) {
    shorted = iov_iter_count(i) - max_bytes;
    iov_iter_truncate(i, max_bytes);
  }
  int npages = iov_iter_npages(i, maxpages);
  if (shorted)
    iov_iter_reexpand(i, iov_iter_count(i) + shorted);
  return npages;
}

// The OR of every gap between consecutive non-empty iovecs (each start with
// the previous end), from the current segment on and ignoring iov_offset, as
// the kernel's; 0 for UBUF. Other types are the kernel's WARN_ON: ~0U, and
// no abort.
inline unsigned long iov_iter_gap_alignment(const iov_iter* i) {
  if (iter_is_ubuf(i))
    return 0;
  if (IOV_UNLIKELY(!iter_is_iovec(i)))
    return ~0U;
  unsigned long res = 0, v = 0;
  size_t size = i->count;
  for (unsigned long k = 0; k < i->nr_segs; k++) {
    const ::iovec* iov = i->iov + k;
    if (iov->iov_len) {
      unsigned long base = reinterpret_cast<unsigned long>(iov->iov_base);
      if (v)  // not the first: this start | the previous end
        res |= base | v;
      v = base + iov->iov_len;
      if (size <= iov->iov_len)
        break;
      size -= iov->iov_len;
    }
  }
  return res;
}

}  // namespace iov
