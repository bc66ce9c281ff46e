// page_alloc_internal.hpp: the allocator's frame metadata and the lookup from
// a frame to it, shared by src/page_alloc.cc (the buddy allocator) and
// src/page_alloc_direct.cc (orders above 9) through page_alloc_pool.hpp,
// src/page_region.cc (the address table, the mappings), src/page_alloc_shared.cc
// (the memfd behind __GFP_VMAPPABLE frames), src/page_ref.cc (reference
// counts, compound pages, deferred frees) and src/vmalloc.cc.
//
// A frame's metadata lives beside the frames, never in them: a chunk's
// descriptor holds one frame_meta per frame, and a two-level table indexed by
// address / 2 MiB finds the descriptor of any address (nullptr for memory the
// allocator did not map).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "iov/page_alloc.hpp"
#include "iov/rcu.hpp"

namespace iov::internal {

inline constexpr unsigned CHUNK_ORDER = PAGE_ALLOC_CHUNK_ORDER;
inline constexpr unsigned CHUNK_FRAMES = 1u << CHUNK_ORDER;
inline constexpr size_t CHUNK_SIZE = PAGE_ALLOC_CHUNK_SIZE;

enum frame_flags : uint8_t {
  F_FREE = 1,      // first frame of a free block on a free list (order: the block's)
  F_CACHED = 2,    // an order-0 frame in a thread cache
  F_HEAD = 4,      // first frame of a live allocation (order: the allocation's)
  F_COMPOUND = 8,  // with F_HEAD: allocated with __GFP_COMP
  F_TAIL = 16,     // a later frame of a compound allocation (head_index names its head)
  F_ZEROED = 32,   // with F_FREE or F_CACHED: the frames are known to hold zeroes
  F_DIRECT = 64,   // the head of a direct mapping (no chunk)
};

// struct page's fields that iov needs, out of band (32 bytes per 4 KiB frame).
struct frame_meta {
  union {
    struct {
      frame_meta* next;
      frame_meta* prev;
    } link;               // F_FREE: the free list of its order
    rcu_head rcu;         // F_HEAD: waiting for a grace period before the free
    uint16_t head_index;  // F_TAIL
  };
  std::atomic<int> refcount;  // on a head (and an order-0 frame); 0 when free
  // Atomic because the buddy allocator reads a neighbour's (under the lock)
  // while the neighbour's owner writes its own (without it).
  std::atomic<uint8_t> order;
  std::atomic<uint8_t> flags;
  uint16_t index;  // within its chunk
};
static_assert(sizeof(frame_meta) == 32);

enum class region_kind : uint8_t { chunk, direct };

struct allocator;  // a pool (src/page_alloc.cc): the default one or the shared one

// A 2 MiB chunk's descriptor.
struct chunk {
  region_kind kind;  // region_kind::chunk; first, as in direct_mapping
  uintptr_t base;
  allocator* pool;
  int64_t file_offset;  // where its frames are in the shared pool's memfd; -1: anonymous
  frame_meta frames[CHUNK_FRAMES];
};

// An allocation above the chunk order: a mapping of its own, one frame_meta
// for its head (its later frames have no count of their own).
struct direct_mapping {
  region_kind kind;  // region_kind::direct
  uintptr_t base;
  size_t bytes;
  allocator* pool;
  int fd;  // its own memfd in the shared pool; -1: anonymous
  frame_meta head;
};

// The descriptor that covers addr, or nullptr (memory not from the allocator).
// Lock-free: the table's leaves are published once and never freed.
void* region_of(uintptr_t addr) noexcept;
// Points the 2 MiB slot of addr at r (nullptr: no longer the allocator's).
// False when no leaf could be allocated.
bool set_region(uintptr_t addr, void* r) noexcept;

// bytes of fresh zeroed memory aligned to `align` (a power of two >= 2 MiB):
// anonymous when fd < 0, else bytes of the file fd from file_offset, shared.
void* map_aligned(size_t bytes, size_t align, int fd = -1, int64_t file_offset = 0) noexcept;

// The shared pool's backing (src/page_alloc_shared.cc). A chunk is 2 MiB of
// one memfd that grows as chunks are added; a range given back is punched
// out of it and its offset reused.
void* shared_chunk_map(int64_t* file_offset) noexcept;
void shared_chunk_unmap(void* base, int64_t file_offset) noexcept;
// Gives bytes at addr back to the system (they read as zeroes after): what
// MADV_DONTNEED does for anonymous memory, which for a shared mapping only
// drops the page tables and keeps the file's pages.
bool shared_release(void* addr, size_t bytes) noexcept;
void* shared_direct_map(size_t bytes, int* fd) noexcept;
void shared_direct_unmap(void* base, size_t bytes, int fd) noexcept;

// Where p's frame lives in a file, for a second mapping of it (vmap): false
// for a frame that is not from the shared pool.
bool frame_backing(const page* p, int* fd, int64_t* file_offset) noexcept;

inline chunk* chunk_of(frame_meta* m) {
  return reinterpret_cast<chunk*>(reinterpret_cast<unsigned char*>(m - m->index) -
                                  offsetof(chunk, frames));
}

inline page* page_of(frame_meta* m) {
  if (m->flags & F_DIRECT)
    return reinterpret_cast<page*>(
        reinterpret_cast<direct_mapping*>(reinterpret_cast<unsigned char*>(m) -
                                          offsetof(direct_mapping, head))->base);
  return reinterpret_cast<page*>(chunk_of(m)->base + (uintptr_t{m->index} << PAGE_SHIFT));
}

// The metadata of p's own frame; nullptr when the allocator did not hand it
// out. A later frame of a direct mapping has none of its own: *tail_of is set
// to the mapping's head instead.
frame_meta* frame_meta_of(const page* p, frame_meta** tail_of) noexcept;

// Frees an allocation whose last reference is gone.
void free_allocation(frame_meta* head) noexcept;

// Frees p's allocation after a grace period through the rcu_head in its
// metadata (no holder to allocate). False when p is not the head of a live
// allocation of that order holding one reference: the caller defers otherwise.
bool free_pages_after_grace_period(page* p, unsigned order) noexcept;

}  // namespace iov::internal
