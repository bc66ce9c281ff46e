// bvecq.hpp: a segmented queue of bio_vec arrays, walked by an ITER_BVECQ
// iterator, and the helpers that build, share, slice and free one (the
// kernel's include/linux/bvecq.h and fs/netfs/bvecq.c as posted in "[PATCH v5
// 00/21] netfs: Keep track of folios in a segmented bio_vec[] chain", David
// Howells, 2026-07-06, queued in vfs-7.4.netfs to replace ITER_FOLIOQ).
//
// Segments link through next and prev (NULL at the ends, not circular); each
// holds nr_slots used bio_vecs of max_slots, in its own __bv[] or elsewhere.
// prev serves only iov_iter_revert(). Each segment has a reference count; a
// chain holds one reference on each of its segments after the first, and a
// bvecq_pos one on the segment it points into. The last bvecq_put() of a
// segment frees it and, as its mem_type says, the pages its slots name.
//
//   iov::bvecq* bq = iov::bvecq_alloc_buffer(65536, iov::GFP_KERNEL);  // 16 pages
//   iov::iov_iter_bvec_queue(&it, iov::ITER_DEST, bq, 0, 0, 65536);
//   ...
//   iov::bvecq_put(bq);  // the segments and their pages
//
// One producer may append (bvecq_filled_to(), bvecq_buffer_append()) while one
// consumer walks and frees what it has used (bvecq_delete_spent()): the slot
// count and the next pointer are published with release and read with acquire.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "iov/bvec.hpp"

// The kernel's flexible array member __bv[] (and a bvecq made empty with {})
// are GNU extensions that GCC and Clang implement in C++; __extension__ quiets
// GCC's -Wpedantic, and Clang needs its two warnings named.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc99-extensions"
#pragma clang diagnostic ignored "-Wzero-length-array"
#endif

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
  // A flexible array member, as the kernel's: a GNU extension in C++ that
  // GCC and Clang implement; __extension__ keeps -Wpedantic quiet about it.
  __extension__ bio_vec __bv[];  // the default array (if inline_bv)
};

#if UINTPTR_MAX == UINT64_MAX
// Slots in __bv[] of a segment in a 512-byte allocation (2 words a slot; the
// segment's header is 6 words, 3 slots).
inline constexpr unsigned BVECQ_STD_SLOTS = 29;
static_assert(sizeof(bvecq) + BVECQ_STD_SLOTS * sizeof(bio_vec) == 512);
#else
inline constexpr unsigned BVECQ_STD_SLOTS = 18;  // a 256-byte allocation
#endif

// A position in a queue: it holds a reference on the segment it points into.
struct bvecq_pos {
  ::iov::bvecq* bvecq;  // the segment
  unsigned offset;  // the offset within the slot
  uint16_t slot;    // the slot
};

// Prints each segment and its slots to stderr (the kernel's pr_notice).
void bvecq_dump(const bvecq* bq);
// One segment with at least nr_slots slots (or BVECQ_STD_SLOTS, if more are
// asked for), rounded up to fill a power-of-two allocation of at most 512
// bytes; one reference, slots not initialised. nullptr when out of memory.
bvecq* bvecq_alloc_one(size_t nr_slots, gfp_t gfp);
// A chain of such segments with nr_slots slots in all; nullptr when out of memory.
bvecq* bvecq_alloc_chain(size_t nr_slots, gfp_t gfp);
// A chain whose slots name pages from the allocator (BVECQ_MEM_ALLOCED) that
// hold at least size bytes, after pre_slots unset slots in the first segment
// (at most BVECQ_STD_SLOTS: else nullptr, the kernel's WARN).
bvecq* bvecq_alloc_buffer2(size_t size, unsigned pre_slots, gfp_t gfp);
// Drops a reference on each segment from bq on until one is not the last;
// the last frees the segment and its pages as mem_type says. nullptr: nothing.
void bvecq_put(bvecq* bq);
// Grows the buffer *_buffer (nullptr: a new one) of *_cur_size bytes to at
// least size (rounded up to pages) with allocated pages, in segments of its
// own kind; 0 or -ENOMEM (what was added stays, counted in *_cur_size).
int bvecq_expand_buffer(bvecq** _buffer, size_t* _cur_size, size_t size, gfp_t gfp);
// Keeps size bytes from slot on and frees the rest of the chain: 0, or
// -EMSGSIZE (nothing changed) if the chain holds less.
int bvecq_shorten_buffer(bvecq* bq, unsigned slot, size_t size);
// pos at a new empty segment of BVECQ_STD_SLOTS slots: 0 or -ENOMEM.
int bvecq_buffer_init(bvecq_pos* pos, gfp_t gfp);
// Links bq after pos's segment (published with release) and moves pos to it.
void bvecq_buffer_append(bvecq_pos* pos, bvecq* bq);
// Moves pos on by amount bytes; at the end of the queue it stays past the
// last slot of the last segment (past that is the kernel's WARN: it stops).
void bvecq_pos_advance(bvecq_pos* pos, size_t amount);
// Zeroes amount bytes from pos on and moves pos past them: the bytes zeroed.
ssize_t bvecq_zero(bvecq_pos* pos, size_t amount);
// The bytes and (in *_nr_slots) slots of the next slice from pos of at most
// max_size bytes and max_slots slots, ending at a discontiguous segment;
// moves pos past it.
size_t bvecq_slice(bvecq_pos* pos, size_t max_size, unsigned max_slots, unsigned* _nr_slots);
// As bvecq_slice, and copies the slice's bio_vecs into a new chain in *to
// (the caller's reference; no page references taken): the bytes, -EIO if
// there was nothing to take, -ENOMEM.
ssize_t bvecq_extract(bvecq_pos* pos, size_t max_size, unsigned max_slots, bvecq** to);

inline bvecq* bvecq_alloc_buffer(size_t size, gfp_t gfp) { return bvecq_alloc_buffer2(size, 0, gfp); }

inline bvecq* bvecq_get(bvecq* bq) {
  bq->ref.fetch_add(1, std::memory_order_relaxed);
  return bq;
}

inline bool bvecq_is_full(const bvecq* bq) { return bq->nr_slots >= bq->max_slots; }

// The producer's: slots before `to` are filled (release, after the slots).
inline void bvecq_filled_to(bvecq* bq, unsigned to) {
  std::atomic_ref<uint16_t>(bq->nr_slots).store(static_cast<uint16_t>(to), std::memory_order_release);
}
// The consumer's: the filled slots (acquire, before it reads them).
inline unsigned bvecq_nr_slots_acquire(const bvecq* bq) {
  return std::atomic_ref<uint16_t>(const_cast<bvecq*>(bq)->nr_slots).load(std::memory_order_acquire);
}
inline bool bvecq_acquire_slot(const bvecq* bq, unsigned slot) { return slot < bvecq_nr_slots_acquire(bq); }

inline void bvecq_pos_set(bvecq_pos* pos, const bvecq_pos* at) {
  *pos = *at;
  bvecq_get(pos->bvecq);
}
inline void bvecq_pos_unset(bvecq_pos* pos) {
  bvecq_put(pos->bvecq);
  pos->bvecq = nullptr;
  pos->slot = 0;
  pos->offset = 0;
}
// *pos = *from, and from cleared: the reference moves with it.
inline void bvecq_pos_transfer(bvecq_pos* pos, bvecq_pos* from) {
  *pos = *from;
  from->bvecq = nullptr;
  from->slot = 0;
  from->offset = 0;
}
// pos's reference moves to `to` (slot and offset are the caller's).
inline void bvecq_pos_move(bvecq_pos* pos, bvecq* to) {
  bvecq* old = pos->bvecq;
  if (old != to) {
    pos->bvecq = bvecq_get(to);
    bvecq_put(old);
  }
}
// pos onto the next byte if its slot or segment is used up: false at the end.
inline bool bvecq_pos_nudge(bvecq_pos* pos) {
  bvecq* bq = pos->bvecq;
  for (;;) {
    if (!bvecq_acquire_slot(bq, pos->slot)) {
      bq = std::atomic_ref<bvecq*>(bq->next).load(std::memory_order_acquire);
      if (!bq)
        return false;
      bvecq_pos_move(pos, bq);
      pos->slot = 0;
      pos->offset = 0;
      continue;
    }
    if (pos->offset >= bq->bv[pos->slot].bv_len) {
      pos->slot++;
      pos->offset = 0;
      continue;
    }
    return true;
  }
}
// pos to the start of the next slot: false, past the last, at the end
// (v5: the bound is the slot count, and a move resets the slot).
inline bool bvecq_pos_step(bvecq_pos* pos) {
  bvecq* bq = pos->bvecq;
  pos->slot++;
  pos->offset = 0;
  if (pos->slot < bq->nr_slots)
    return true;
  if (!bq->next)
    return false;
  bvecq_pos_move(pos, bq->next);
  pos->slot = 0;
  return true;
}

// The consumer's: frees the used-up segment at pos (the caller has set
// pos->slot, and passes it as slot) unless it is the last, which stays so
// that producer and consumer keep one queue; pos moves on, taking the freed
// segment's reference on the next. The caller reloads from pos. False when
// there is nothing more to consume for now.
inline bool bvecq_delete_spent(bvecq_pos* pos, unsigned slot) {
  bvecq* spent = pos->bvecq;
  for (;;) {
    bvecq* next = std::atomic_ref<bvecq*>(spent->next).load(std::memory_order_acquire);
    if (!next)
      return false;
    if (slot < bvecq_nr_slots_acquire(spent))
      return true;  // the producer added more
    next->prev = nullptr;
    spent->next = nullptr;
    bvecq_put(spent);
    pos->bvecq = next;
    pos->slot = 0;
    pos->offset = 0;
    if (bvecq_acquire_slot(next, 0))
      return true;
    spent = next;
    slot = 0;
  }
}

// bvecq_alloc and bvecq_free are iov's, for what bvecq_alloc_one does not
// give: a segment of exactly max_slots slots (more than BVECQ_STD_SLOTS if
// need be), zeroed, as the kunit tests' kzalloc(struct_size()) makes them.
// One reference; bvecq_put() frees it too. bvecq_free frees one segment,
// whatever its count, and not the pages its slots name.
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

#if defined(__clang__)
#pragma clang diagnostic pop
#endif
