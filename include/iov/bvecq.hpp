// bvecq.hpp: a segmented queue of bio_vec arrays, walked by an ITER_BVECQ
// iterator (the kernel's include/linux/bvecq.h as posted in "[PATCH v4 15/30]
// iov_iter: Add a segmented queue of bio_vec[]", David Howells, 2026-06-16;
// not yet in mainline, where it is to replace ITER_FOLIOQ and ITER_XARRAY).
//
// Segments link through next and prev (NULL at the ends, not circular); each
// holds nr_slots used bio_vecs of max_slots, in its own __bv[] or elsewhere.
// prev serves only iov_iter_revert().
//
//   iov::bvecq* bq = iov::bvecq_alloc(13);      // __bv[] inline, zeroed
//   iov::bvec_set_page(&bq->bv[bq->nr_slots++], pg, 4096, 0);
//   iov::iov_iter_bvec_queue(&it, iov::ITER_DEST, bq, 0, 0, 4096);
//   ...
//   iov::bvecq_free(bq);                        // the segment only, not its pages
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "iov/bvec.hpp"

namespace iov {

// The kind of memory retention the elements of bvecq::bv use and how to clean
// it up (the kernel's enum bvecq_mem; a byte, as its __mode(byte)).
enum bvecq_mem : uint8_t {
  BVECQ_MEM_EXTERNAL,   // externally retained memory: no freeing
  BVECQ_MEM_PAGECACHE,  // ref'd pagecache pages: must put
  BVECQ_MEM_GUP,        // pinned memory from get_user_pages(): unpin
  BVECQ_MEM_ALLOCED,    // memory allocated by the bvecq: can be freed/pooled
};

// One segment. ->bv == ->__bv does not tell that __bv[] is in use (an array
// allocated separately may happen to follow the segment): inline_bv does.
// fpos and discontig let non-contiguous data sets be chained and told apart.
struct bvecq {
  bvecq* next;                  // next segment or nullptr
  bvecq* prev;                  // previous segment or nullptr
  unsigned long long fpos;      // file position
  std::atomic<unsigned> ref;    // the kernel's refcount_t
  uint32_t priv;                // private data
  uint16_t nr_slots;            // elements of bv[] used
  uint16_t max_slots;           // elements allocated in bv[]
  bvecq_mem mem_type : 3;       // what sort of memory and how to free it
  bool inline_bv : 1;           // __bv[] is in use
  bool discontig : 1;           // not contiguous with the previous segment
  bio_vec* bv;                  // the array of page fragments
  bio_vec __bv[];               // the default array (if inline_bv)
};

// A zeroed segment with max_slots bio_vecs in __bv[] (inline_bv, one
// reference), as the posting's kunit test allocates them with
// kzalloc(struct_size(bq, __bv, max_slots)); nullptr when out of memory.
inline bvecq* bvecq_alloc(uint16_t max_slots) {
  size_t size = sizeof(bvecq) + size_t{max_slots} * sizeof(bio_vec);
  void* mem = std::calloc(1, size);
  if (!mem)
    return nullptr;
  auto* bq = new (mem) bvecq{};
  bq->ref.store(1, std::memory_order_relaxed);
  bq->max_slots = max_slots;
  bq->bv = bq->__bv;
  bq->inline_bv = true;
  return bq;
}

// Frees one segment from bvecq_alloc() (not the pages its bio_vecs name).
inline void bvecq_free(bvecq* bq) {
  if (!bq)
    return;
  bq->~bvecq();
  std::free(bq);
}

// The step every walk of a queue takes where `slot` has run past the last
// of bq's: on to the first slot of the next segment. False, with nothing
// moved, at the end of the queue. One segment a call, so that a caller
// that stops on a zero count stops where the kernel's loops do.
inline bool bvecq_next_slot(const bvecq** bq, unsigned* slot) {
  if (!(*bq)->next)
    return false;
  *bq = (*bq)->next;
  *slot = 0;
  return true;
}

}  // namespace iov
