// page_alloc.hpp: what the page allocator behind alloc_pages() holds, for a
// user who wants memory use visible without `ps` (iov-fio and iov-nbd print
// it). The allocation functions themselves have the kernel's names and live
// in page.hpp; docs/memory.md describes the layout and when memory goes back
// to the system.
//
//   iov::page_alloc_stats s = iov::page_alloc_read_stats();
//   printf("%zu frames in use, %zu chunks\n", s.frames_in_use, s.chunks_held);
#pragma once

#ifdef IOV_HEADER_ONLY
#error "iov/page_alloc.hpp needs the compiled library (the page allocator): link iov::iov (pkg-config iov), not iov::headers (iov-headers)"
#include "iov: link iov::iov"
#endif

#include <cstddef>

#include "iov/page.hpp"

namespace iov {

// The allocator's frames come from 2 MiB naturally aligned chunks (order 9);
// larger allocations are mappings of their own.
inline constexpr unsigned PAGE_ALLOC_CHUNK_ORDER = 9;
inline constexpr size_t PAGE_ALLOC_CHUNK_SIZE = PAGE_SIZE << PAGE_ALLOC_CHUNK_ORDER;

struct page_alloc_stats {
  size_t frames_in_use;   // frames handed out and not yet freed (direct mappings included)
  size_t frames_cached;   // free frames in the per-thread caches
  size_t frames_free;     // free frames in the chunks' free lists
  size_t chunks_held;     // 2 MiB chunks mapped
  size_t direct_bytes;    // bytes in direct mappings (orders above 9)
  size_t bytes_returned;  // bytes given back to the system so far (munmap, MADV_DONTNEED)
};

// A snapshot of each pool taken under its lock, the default pool and the
// shared one behind __GFP_VMAPPABLE added together.
page_alloc_stats page_alloc_read_stats() noexcept;

// Gives back to the system every chunk that is entirely free and the free
// runs of the others, in both pools (the allocator also does this on its own when free
// memory accumulates). Returns the bytes given back.
size_t page_alloc_release_free() noexcept;

// Moves the calling thread's cached free frames (of both pools) back to the
// free lists (a thread does this when it exits).
void page_alloc_drain_thread_cache() noexcept;

namespace internal {
// Holds the allocator's lock, so that a test can show that an allocation
// without __GFP_DIRECT_RECLAIM fails instead of waiting.
void page_alloc_lock_for_test() noexcept;
void page_alloc_unlock_for_test() noexcept;
}  // namespace internal

}  // namespace iov
