// folio_queue.hpp: a queue of folio segments, walked by an ITER_FOLIOQ
// iterator (the kernel's include/linux/folio_queue.h, mainline since 6.12,
// as it stands in 2026: two marks a slot, rreq_id and debug_id).
//
// Each segment holds up to folioq_nr_slots() folios with their orders and two
// 1-bit marks a slot; segments link through next and prev, so a producer adds
// at the tail while a consumer takes from the head without a lock.
//
//   iov::folio_queue* fq = new iov::folio_queue{};
//   iov::folioq_init(fq, 0);
//   iov::folioq_append(fq, iov::folio_alloc(iov::GFP_KERNEL, 2));
//   iov::iov_iter_folio_queue(&it, iov::ITER_DEST, fq, 0, 0, iov::folioq_folio_size(fq, 0));
#pragma once

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "iov/folio.hpp"
#include "iov/folio_batch.hpp"
#include "iov/page.hpp"

namespace iov {

struct folio_queue {
  folio_batch vec;                   // folios in the queue segment
  uint8_t orders[FOLIO_BATCH_SIZE];  // order of each folio
  folio_queue* next;                 // next queue segment or nullptr
  folio_queue* prev;                 // previous queue segment or nullptr
  unsigned long marks;               // 1-bit mark per folio
  unsigned long marks2;              // second 1-bit mark per folio
  unsigned rreq_id;
  unsigned debug_id;
};
static_assert(FOLIO_BATCH_SIZE <= sizeof(unsigned long) * CHAR_BIT, "marks is not big enough");

namespace internal {
// The kernel's test_bit/set_bit/clear_bit: atomic on one word.
inline bool test_mark(const unsigned long* word, unsigned slot) {
  return (std::atomic_ref<unsigned long>(*const_cast<unsigned long*>(word)).load(std::memory_order_relaxed) >>
          slot) & 1;
}
inline void set_mark(unsigned long* word, unsigned slot) {
  std::atomic_ref<unsigned long>(*word).fetch_or(1UL << slot, std::memory_order_relaxed);
}
inline void clear_mark(unsigned long* word, unsigned slot) {
  std::atomic_ref<unsigned long>(*word).fetch_and(~(1UL << slot), std::memory_order_relaxed);
}
}  // namespace internal

// Initialises a segment and sets the identifier traces use; the folio
// pointers are left as they are.
inline void folioq_init(folio_queue* folioq, unsigned rreq_id) {
  folio_batch_init(&folioq->vec);
  folioq->next = nullptr;
  folioq->prev = nullptr;
  folioq->marks = 0;
  folioq->marks2 = 0;
  folioq->rreq_id = rreq_id;
  folioq->debug_id = 0;
}

// The capacity of a segment (not to be assumed the same for every segment).
inline unsigned folioq_nr_slots(const folio_queue*) { return FOLIO_BATCH_SIZE; }

// The folios added to a segment; not decreased as folios are removed.
inline unsigned folioq_count(const folio_queue* folioq) { return folio_batch_count(&folioq->vec); }

// Whether a segment is fully occupied; not changed as folios are removed.
inline bool folioq_full(const folio_queue* folioq) { return folioq_count(folioq) >= folioq_nr_slots(folioq); }

inline bool folioq_is_marked(const folio_queue* folioq, unsigned slot) {
  return internal::test_mark(&folioq->marks, slot);
}
inline void folioq_mark(folio_queue* folioq, unsigned slot) { internal::set_mark(&folioq->marks, slot); }
inline void folioq_unmark(folio_queue* folioq, unsigned slot) { internal::clear_mark(&folioq->marks, slot); }
inline bool folioq_is_marked2(const folio_queue* folioq, unsigned slot) {
  return internal::test_mark(&folioq->marks2, slot);
}
inline void folioq_mark2(folio_queue* folioq, unsigned slot) { internal::set_mark(&folioq->marks2, slot); }
inline void folioq_unmark2(folio_queue* folioq, unsigned slot) { internal::clear_mark(&folioq->marks2, slot); }

// Adds a folio at the tail of a segment and returns its slot; its order is
// recorded, the marks are left alone. The caller checks the capacity.
inline unsigned folioq_append(folio_queue* folioq, folio* f) {
  unsigned slot = folioq->vec.nr++;
  folioq->vec.folios[slot] = f;
  folioq->orders[slot] = static_cast<uint8_t>(folio_order(f));
  return slot;
}

// folioq_append() that also sets the first mark.
inline unsigned folioq_append_mark(folio_queue* folioq, folio* f) {
  unsigned slot = folioq_append(folioq, f);
  folioq_mark(folioq, slot);
  return slot;
}

// The folio in a slot (no bounds check; nullptr once cleared).
inline folio* folioq_folio(const folio_queue* folioq, unsigned slot) { return folioq->vec.folios[slot]; }

// The order recorded for a slot (0 for a slot never added to, if zeroed).
inline unsigned folioq_folio_order(const folio_queue* folioq, unsigned slot) { return folioq->orders[slot]; }

inline size_t folioq_folio_size(const folio_queue* folioq, unsigned slot) {
  return PAGE_SIZE << folioq_folio_order(folioq, slot);
}

// Clears a slot's folio and marks; the count is left unchanged.
inline void folioq_clear(folio_queue* folioq, unsigned slot) {
  folioq->vec.folios[slot] = nullptr;
  folioq_unmark(folioq, slot);
  folioq_unmark2(folioq, slot);
}

}  // namespace iov
