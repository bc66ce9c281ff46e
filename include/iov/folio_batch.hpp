// folio_batch.hpp: a small fixed array of folios (the kernel's
// include/linux/folio_batch.h, formerly pagevec.h), the slots of a folio_queue.
//
//   iov::folio_batch fb;
//   iov::folio_batch_init(&fb);
//   iov::folio_batch_add(&fb, f);   // the space left; 0 when full
#pragma once

#include <cstddef>

#include "iov/config.hpp"

namespace iov {

struct folio;

// 31 pointers and the header make the batch a power of two in size.
inline constexpr unsigned FOLIO_BATCH_SIZE = 31;
inline constexpr unsigned PAGEVEC_SIZE = FOLIO_BATCH_SIZE;  // its name before 2026

struct folio_batch {
  unsigned char nr;
  unsigned char i;
  bool percpu_pvec_drained;
  folio* folios[FOLIO_BATCH_SIZE];
};

inline void folio_batch_init(folio_batch* fbatch) {
  fbatch->nr = 0;
  fbatch->i = 0;
  fbatch->percpu_pvec_drained = false;
}

inline void folio_batch_reinit(folio_batch* fbatch) {
  fbatch->nr = 0;
  fbatch->i = 0;
}

inline unsigned folio_batch_count(const folio_batch* fbatch) { return fbatch->nr; }

inline unsigned folio_batch_space(const folio_batch* fbatch) { return FOLIO_BATCH_SIZE - fbatch->nr; }

// Adds a folio; returns the slots left (0: the batch is now full).
inline unsigned folio_batch_add(folio_batch* fbatch, folio* f) {
  fbatch->folios[fbatch->nr++] = f;
  return folio_batch_space(fbatch);
}

// The next folio in the batch, nullptr at the end.
inline folio* folio_batch_next(folio_batch* fbatch) {
  if (fbatch->i == fbatch->nr)
    return nullptr;
  return fbatch->folios[fbatch->i++];
}

}  // namespace iov
