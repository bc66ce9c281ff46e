// bvecq_position.hpp: the position operations of an ITER_BVECQ iterator
// (position.hpp dispatches here), as the posted lib/iov_iter.c has them (see
// bvecq.hpp for the posting). The queue is walked slot by slot, a finished
// segment handing over to ->next; revert walks back through ->prev.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "iov/bvecq.hpp"
#include "iov/config.hpp"
#include "iov/iov_iter.hpp"
#include "iov/page.hpp"

namespace iov::internal {

// The kernel's iov_iter_bvecq_advance(): like the bvec array's, an advance by
// 0 with bytes left still steps over the empty slots at the front.
inline void bvecq_advance(iov_iter* i, size_t by) {
  const bvecq* bq = i->bvecq;
  unsigned slot = i->bvecq_slot;
  if (!i->count)
    return;
  i->count -= by;
  by += i->iov_offset;  // from the beginning of the current slot
  do {
    if (slot >= bq->nr_slots) {
      if (!bvecq_next_slot(&bq, &slot))
        break;
      continue;
    }
    size_t len = bq->bv[slot].bv_len;
    if (IOV_LIKELY(by < len))
      break;
    by -= len;
    slot++;
  } while (by);
  i->iov_offset = by;
  i->bvecq_slot = static_cast<uint16_t>(slot);
  i->bvecq = bq;
}

// Bytes the queue holds before the current slot (through ->prev), counted
// until they reach `enough`.
inline size_t bvecq_behind(const iov_iter* i, size_t enough) {
  const bvecq* bq = i->bvecq;
  unsigned slot = std::min<unsigned>(i->bvecq_slot, bq->nr_slots);
  size_t behind = 0;
  for (;;) {
    while (slot && behind < enough)
      behind += bq->bv[--slot].bv_len;
    if (behind >= enough || !bq->prev)
      return behind;
    bq = bq->prev;
    slot = bq->nr_slots;
  }
}

// The kernel's iov_iter_bvecq_revert() of the bytes before the current slot
// (the caller has taken off iov_offset): refuses, changing nothing, where the
// kernel would run off the head of the queue.
inline bool bvecq_revert(iov_iter* i, size_t unroll) {
  if (IOV_BUG_ON(bvecq_behind(i, unroll) < unroll, "iov_iter_revert: past the head of the bvec queue"))
    return false;
  const bvecq* bq = i->bvecq;
  unsigned slot = i->bvecq_slot;
  for (;;) {
    if (slot == 0) {
      bq = bq->prev;
      slot = bq->nr_slots;
      continue;
    }
    slot--;
    size_t len = bq->bv[slot].bv_len;
    if (unroll <= len) {
      i->iov_offset = len - unroll;
      break;
    }
    unroll -= len;
  }
  i->bvecq_slot = static_cast<uint16_t>(slot);
  i->bvecq = bq;
  return true;
}

// f(bv, skip, part) for each slot from the current one on until the count is
// covered, part = min(bv_len - skip, what is left of the count); f returns
// false to stop (and then so does this). Empty slots are visited, as the
// kernel's npages and alignment loops do.
template <class F>
inline bool bvecq_for_each_slot(const iov_iter* i, F&& f) {
  unsigned slot = i->bvecq_slot;
  size_t skip = i->iov_offset, size = i->count;
  for (const bvecq* bq = i->bvecq; bq; bq = bq->next, slot = 0) {
    for (; slot < bq->nr_slots; slot++) {
      const bio_vec& bv = bq->bv[slot];
      size_t part = std::min(size_t{bv.bv_len} - skip, size);
      if (!f(bv, skip, part))
        return false;
      size -= part;
      if (!size)
        return true;
      skip = 0;
    }
  }
  return true;
}

// The kernel's iov_npages_bvecq(); caller: count > 0, maxpages > 0.
inline int bvecq_npages(const iov_iter* i, int maxpages) {
  size_t npages = 0;
  bvecq_for_each_slot(i, [&](const bio_vec& bv, size_t skip, size_t part) {
    size_t offs = (bv.bv_offset + skip) % PAGE_SIZE;
    npages += (offs + part + PAGE_SIZE - 1) / PAGE_SIZE;
    return npages < static_cast<size_t>(maxpages);
  });
  return static_cast<int>(std::min(npages, static_cast<size_t>(maxpages)));
}

// The kernel's iov_iter_alignment_bvecq().
inline unsigned long bvecq_alignment(const iov_iter* i) {
  unsigned long res = 0;
  if (!i->count)
    return 0;
  bvecq_for_each_slot(i, [&](const bio_vec& bv, size_t skip, size_t part) {
    res |= bv.bv_offset + skip;
    res |= part;
    return true;
  });
  return res;
}

// iov_iter_is_aligned() as the kernel's bvec version asks it, slot by slot.
inline bool bvecq_is_aligned(const iov_iter* i, unsigned addr_mask, unsigned len_mask) {
  if (!i->count)
    return true;
  return bvecq_for_each_slot(i, [&](const bio_vec& bv, size_t skip, size_t part) {
    return !(part & len_mask) && !((bv.bv_offset + skip) & addr_mask);
  });
}

// The kernel's single-segment count: what is left of the current slot (or,
// past the end of a segment, of the next one's first).
inline size_t bvecq_single_seg_count(const iov_iter* i) {
  if (!i->count)
    return 0;
  const bvecq* bq = i->bvecq;
  unsigned slot = i->bvecq_slot;
  size_t offset = i->iov_offset;
  while (slot >= bq->nr_slots) {
    if (!bvecq_next_slot(&bq, &slot))
      return 0;
    offset = 0;
  }
  return std::min(i->count, size_t{bq->bv[slot].bv_len} - offset);
}

// Bytes the queue holds from the current position on, counted until they
// reach `enough` (for iov_iter_reexpand()'s check).
inline size_t bvecq_ahead(const iov_iter* i, size_t enough) {
  unsigned slot = i->bvecq_slot;
  size_t ahead = 0, need = enough + i->iov_offset;
  for (const bvecq* bq = i->bvecq; bq && ahead < need; bq = bq->next, slot = 0)
    for (; slot < bq->nr_slots; slot++)
      ahead += bq->bv[slot].bv_len;
  return ahead < i->iov_offset ? 0 : ahead - i->iov_offset;
}

}  // namespace iov::internal
