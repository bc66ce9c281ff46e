// page_alloc_pool.hpp: a pool of the page allocator (its free lists, counters
// and lock) and what both its buddy allocator (src/page_alloc.cc) and its
// direct mappings of orders above 9 (src/page_alloc_direct.cc) do with one:
// find it, lock it, hand a block out.
#pragma once

#include <cstring>
#include <mutex>

#include "page_alloc_internal.hpp"

// Under AddressSanitizer free frames are poisoned, so that a use after free
// or an overflow into a free neighbour is caught as it was when each page
// was its own malloc.
#if defined(__SANITIZE_ADDRESS__)
#define IOV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IOV_ASAN 1
#endif
#endif
#ifdef IOV_ASAN
#include <sanitizer/asan_interface.h>
#define IOV_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define IOV_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define IOV_POISON(p, n) ((void)(p), (void)(n))
#define IOV_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace iov::internal {

inline constexpr unsigned RELEASE_ORDER = 7;  // free runs of 512 KiB and more are given back
inline constexpr unsigned TRYLOCK_SPINS = 64;

struct thread_cache;  // src/page_alloc.cc

struct free_area {
  frame_meta* first = nullptr;
  size_t count = 0;
};

// A pool. Everything below `lock` is guarded by it.
struct allocator {
  bool shared = false;  // frames from the memfd (__GFP_VMAPPABLE)
  std::mutex lock;
  free_area areas[CHUNK_ORDER + 1];
  size_t chunks_held = 0;
  size_t frames_out = 0;         // frames taken from the free lists (by users and thread caches)
  size_t frames_free = 0;        // frames on the free lists
  size_t dirty_large = 0;        // frames in free blocks of RELEASE_ORDER or more not known zero
  size_t direct_bytes = 0;
  size_t bytes_returned = 0;
  thread_cache* caches = nullptr;  // the threads' caches, for the statistics
};

enum pool_index : unsigned { DEFAULT_POOL, SHARED_POOL, NR_POOLS };

inline allocator* make_pools() {
  auto* p = new allocator[NR_POOLS];  // never destroyed: threads may exit after main
  p[SHARED_POOL].shared = true;
  return p;
}

inline allocator& pool(unsigned index) {
  static allocator* pools = make_pools();
  return pools[index];
}

inline allocator& pool_for(gfp_t gfp) { return pool(gfp & __GFP_VMAPPABLE ? SHARED_POOL : DEFAULT_POOL); }
inline unsigned index_of(const allocator& a) { return a.shared ? SHARED_POOL : DEFAULT_POOL; }

// The lock; without __GFP_DIRECT_RECLAIM only if it is free within a few tries.
inline bool lock_for(allocator& a, gfp_t gfp) {
  if (gfpflags_allow_blocking(gfp)) {
    a.lock.lock();
    return true;
  }
  for (unsigned i = 0; i < TRYLOCK_SPINS; i++) {
    if (a.lock.try_lock())
      return true;
    __builtin_ia32_pause();
  }
  return false;
}

// Makes a block of `order` taken from the free lists (zeroed: known to hold
// zeroes), whose metadata is m and memory p, a live allocation with one
// reference. The caller, which knows the kind of its block, passes p: GCC 12
// followed page_of()'s chunk branch into a direct mapping's descriptor and
// warned of an access out of its bounds (a false -Warray-bounds).
inline page* hand_out(frame_meta* m, page* p, unsigned order, gfp_t gfp, bool zeroed) {
  bool direct = m->flags & F_DIRECT;  // a direct mapping's tails have no metadata
  m->order.store(static_cast<uint8_t>(order), std::memory_order_relaxed);
  m->flags.store(F_HEAD | (direct ? F_DIRECT : 0) | (order && (gfp & __GFP_COMP) ? F_COMPOUND : 0), std::memory_order_relaxed);
  IOV_UNPOISON(p, PAGE_SIZE << order);
  if ((m->flags & F_COMPOUND) && !direct) {
    for (size_t i = 1; i < (size_t{1} << order); i++) {
      m[i].flags.store(F_TAIL, std::memory_order_relaxed);
      m[i].head_index = m->index;
    }
  }
  if ((gfp & __GFP_ZERO) && !zeroed)
    std::memset(p, 0, PAGE_SIZE << order);
  m->refcount.store(1, std::memory_order_release);
  return p;
}

// Orders above CHUNK_ORDER: a mapping of their own (src/page_alloc_direct.cc).
page* alloc_direct(gfp_t gfp, unsigned order);
void free_direct(frame_meta* head);

}  // namespace iov::internal
