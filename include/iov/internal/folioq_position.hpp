// folioq_position.hpp: the position operations of an ITER_FOLIOQ iterator
// (position.hpp dispatches here), as mainline's lib/iov_iter.c has them. The
// iterator may stand on slot folioq_nr_slots() of a segment (the queue may have
// been extended since); a walk or an advance then starts from the next
// segment's first slot.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "iov/config.hpp"
#include "iov/folio_queue.hpp"
#include "iov/iov_iter.hpp"
#include "iov/page.hpp"

namespace iov::internal {

// The kernel's iov_iter_folioq_advance().
inline void folioq_advance(iov_iter* i, size_t size) {
  const folio_queue* folioq = i->folioq;
  unsigned slot = i->folioq_slot;
  if (!i->count)
    return;
  i->count -= size;
  if (slot >= folioq_nr_slots(folioq)) {
    folioq = folioq->next;
    slot = 0;
  }
  size += i->iov_offset;  // from the beginning of the current folio
  do {
    size_t fsize = folioq_folio_size(folioq, slot);
    if (IOV_LIKELY(size < fsize))
      break;
    size -= fsize;
    slot++;
    if (slot >= folioq_nr_slots(folioq) && folioq->next) {
      folioq = folioq->next;
      slot = 0;
    }
  } while (size);
  i->iov_offset = size;
  i->folioq_slot = static_cast<uint8_t>(slot);
  i->folioq = folioq;
}

// Bytes before the current slot as the kernel's revert counts them (a
// previous segment as folioq_nr_slots() folios), until they reach `enough`.
inline size_t folioq_behind(const iov_iter* i, size_t enough) {
  const folio_queue* folioq = i->folioq;
  unsigned slot = std::min(unsigned{i->folioq_slot}, folioq_nr_slots(folioq));
  size_t behind = 0;
  for (;;) {
    while (slot && behind < enough)
      behind += folioq_folio_size(folioq, --slot);
    if (behind >= enough || !folioq->prev)
      return behind;
    folioq = folioq->prev;
    slot = folioq_nr_slots(folioq);
  }
}

// The kernel's iov_iter_folioq_revert() of the bytes before the current slot
// (the caller has taken off iov_offset); refuses, changing nothing, where the
// kernel would run off the head of the queue.
inline bool folioq_revert(iov_iter* i, size_t unroll) {
  if (IOV_BUG_ON(folioq_behind(i, unroll) < unroll, "iov_iter_revert: past the head of the folio queue"))
    return false;
  const folio_queue* folioq = i->folioq;
  unsigned slot = i->folioq_slot;
  for (;;) {
    if (slot == 0) {
      folioq = folioq->prev;
      slot = folioq_nr_slots(folioq);
    }
    slot--;
    size_t fsize = folioq_folio_size(folioq, slot);
    if (unroll <= fsize) {
      i->iov_offset = fsize - unroll;
      break;
    }
    unroll -= fsize;
  }
  i->folioq_slot = static_cast<uint8_t>(slot);
  i->folioq = folioq;
  return true;
}

// The kernel's: the current folio's size, whatever the offset into it. On
// slot folioq_nr_slots() (where the kernel reads past orders[]), the next
// segment's first folio.
inline size_t folioq_single_seg_count(const iov_iter* i) {
  if (!i->count)
    return 0;
  const folio_queue* folioq = i->folioq;
  unsigned slot = i->folioq_slot;
  if (slot >= folioq_nr_slots(folioq)) {
    if (!folioq->next)
      return 0;
    folioq = folioq->next;
    slot = 0;
  }
  return std::min(folioq_folio_size(folioq, slot), i->count);
}

// The kernel's: whole folios, so the range is one run from iov_offset.
inline int folioq_npages(const iov_iter* i, int maxpages) {
  size_t offset = i->iov_offset % PAGE_SIZE;
  size_t npages = (offset + i->count + PAGE_SIZE - 1) / PAGE_SIZE;
  return static_cast<int>(std::min(npages, static_cast<size_t>(maxpages)));
}

inline unsigned long folioq_alignment(const iov_iter* i) { return i->iov_offset | i->count; }

inline bool folioq_is_aligned(const iov_iter* i, unsigned addr_mask, unsigned len_mask) {
  return !(i->count & len_mask) && !(i->iov_offset & addr_mask);
}

// Bytes the folios present from the current position on hold, counted until
// they reach `enough` (for iov_iter_reexpand()'s check).
inline size_t folioq_ahead(const iov_iter* i, size_t enough) {
  unsigned slot = i->folioq_slot;
  size_t ahead = 0, need = enough + i->iov_offset;
  for (const folio_queue* folioq = i->folioq; folioq && ahead < need; folioq = folioq->next, slot = 0)
    for (; slot < folioq_count(folioq) && folioq_folio(folioq, slot); slot++)
      ahead += folioq_folio_size(folioq, slot);
  return ahead < i->iov_offset ? 0 : ahead - i->iov_offset;
}

}  // namespace iov::internal
