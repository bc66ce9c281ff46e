// page_alloc.cc: the page allocator behind alloc_pages() (docs/memory.md).
//
// Frames come from 2 MiB naturally aligned chunks mapped with mmap and
// madvise(MADV_HUGEPAGE), so that a device's pages sit on huge TLB entries
// when the system allows it. Orders 0..9 are a buddy allocator over the
// chunks, under one lock; order 0, nearly all of a driver's traffic, goes
// through a per-thread cache first and takes the lock once per batch. Orders
// above 9 get a mapping of their own (src/page_alloc_direct.cc).
//
// __GFP_VMAPPABLE allocations come from a second pool of the same shape
// whose chunks are ranges of a memfd (src/page_alloc_shared.cc), so that
// vmap() can map their frames a second time; the default pool's frames stay
// private anonymous memory.
//
// Memory goes back to the system: beyond a few spare ones, a chunk whose
// frames are all free is unmapped at once, and once enough free frames have
// been written to, the free runs of 512 KiB and more are released with
// MADV_DONTNEED. Frames that were never written since they were mapped or
// released are known to hold zeroes, and __GFP_ZERO does not clear them again.
#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <vector>

#include "iov/internal/fault_inject.hpp"
#include "page_alloc_pool.hpp"

namespace iov {
namespace internal {
namespace {

constexpr size_t RELEASE_AFTER_FRAMES = 4096;    // RELEASE_ORDER runs: once 16 MiB of them hold old data
constexpr size_t SPARE_CHUNKS = 8;               // entirely free chunks kept mapped (16 MiB)
constexpr unsigned CACHE_CAPACITY = 256, CACHE_BATCH = 64;
constexpr unsigned MAX_ORDER = 40 - PAGE_SHIFT;  // 1 TiB: larger requests fail

// Gives the frames at addr back to the system; they read as zeroes after.
bool release_range(const allocator& a, void* addr, size_t bytes) {
  if (a.shared)
    return shared_release(addr, bytes);
  return madvise(addr, bytes, MADV_DONTNEED) == 0;
}

// --- Free lists (lock held) ---------------------------------------------------

void list_add(allocator& a, frame_meta* m, unsigned order, bool zeroed) {
  m->order.store(static_cast<uint8_t>(order), std::memory_order_relaxed);
  m->flags.store(F_FREE | (zeroed ? F_ZEROED : 0), std::memory_order_relaxed);
  m->refcount.store(0, std::memory_order_relaxed);
  free_area& area = a.areas[order];
  m->link.prev = nullptr;
  m->link.next = area.first;
  if (area.first)
    area.first->link.prev = m;
  area.first = m;
  area.count++;
  a.frames_free += size_t{1} << order;
  if (!zeroed && order >= RELEASE_ORDER)
    a.dirty_large += size_t{1} << order;
}

void list_del(allocator& a, frame_meta* m) {
  unsigned order = m->order;
  free_area& area = a.areas[order];
  if (m->link.prev)
    m->link.prev->link.next = m->link.next;
  else
    area.first = m->link.next;
  if (m->link.next)
    m->link.next->link.prev = m->link.prev;
  area.count--;
  a.frames_free -= size_t{1} << order;
  if (!(m->flags & F_ZEROED) && order >= RELEASE_ORDER)
    a.dirty_large -= size_t{1} << order;
  m->flags.store(0, std::memory_order_relaxed);
}

// A free block of exactly `order`, split from a larger one when needed;
// nullptr when the free lists have none. *zeroed: whether it holds zeroes.
frame_meta* take_block(allocator& a, unsigned order, bool* zeroed) {
  unsigned o = order;
  while (o <= CHUNK_ORDER && !a.areas[o].first)
    o++;
  if (o > CHUNK_ORDER)
    return nullptr;
  frame_meta* m = a.areas[o].first;
  *zeroed = m->flags & F_ZEROED;
  list_del(a, m);
  while (o > order) {
    o--;
    list_add(a, m + (size_t{1} << o), o, *zeroed);  // the upper half stays free
  }
  a.frames_out += size_t{1} << order;
  return m;
}

// Returns a block to the free lists, merged with its free buddies. Returns
// the chunk when it is now entirely free.
chunk* put_block(allocator& a, frame_meta* m, unsigned order, bool zeroed) {
  chunk* c = chunk_of(m);
  unsigned idx = m->index;
  a.frames_out -= size_t{1} << order;
  m->flags.store(0, std::memory_order_relaxed);
  while (order < CHUNK_ORDER) {
    frame_meta* buddy = &c->frames[idx ^ (1u << order)];
    if (!(buddy->flags & F_FREE) || buddy->order != order)
      break;
    zeroed = zeroed && (buddy->flags & F_ZEROED);
    list_del(a, buddy);
    idx &= ~(1u << order);
    order++;
  }
  list_add(a, &c->frames[idx], order, zeroed);
  return order == CHUNK_ORDER ? c : nullptr;
}

// Gives the chunk's descriptor to a new mapping and its frames to the free lists.
bool add_chunk(allocator& a, chunk* c) {
  if (!set_region(c->base, c))
    return false;
  a.chunks_held++;
  a.frames_out += CHUNK_FRAMES;  // put_block counts them back
  put_block(a, &c->frames[0], CHUNK_ORDER, true);
  return true;
}

void unmap_chunk_memory(void* mem, int64_t file_offset) {
  if (file_offset >= 0)
    shared_chunk_unmap(mem, file_offset);
  else
    munmap(mem, CHUNK_SIZE);
}

chunk* new_chunk(allocator& a) {
  int64_t file_offset = -1;
  void* mem = a.shared ? shared_chunk_map(&file_offset) : map_aligned(CHUNK_SIZE, CHUNK_SIZE);
  if (!mem)
    return nullptr;
  auto* c = new (std::nothrow) chunk();
  if (!c) {
    unmap_chunk_memory(mem, file_offset);
    return nullptr;
  }
  c->kind = region_kind::chunk;
  c->base = reinterpret_cast<uintptr_t>(mem);
  c->pool = &a;
  c->file_offset = file_offset;
  IOV_POISON(mem, CHUNK_SIZE);
  for (unsigned i = 0; i < CHUNK_FRAMES; i++)
    c->frames[i].index = static_cast<uint16_t>(i);
  return c;
}

void delete_chunk(chunk* c) {
  IOV_UNPOISON(reinterpret_cast<void*>(c->base), CHUNK_SIZE);
  unmap_chunk_memory(reinterpret_cast<void*>(c->base), c->file_offset);
  delete c;
}

// Chunks to unmap once the lock is dropped (an unmap can take a while).
struct unmap_list {
  chunk* items[8];
  size_t n = 0;
  ~unmap_list() {
    for (size_t i = 0; i < n; i++)
      delete_chunk(items[i]);
  }
};

// A chunk that just became entirely free: unmapped unless it is one of the spares.
void retire_chunk(allocator& a, chunk* c, unmap_list& later) {
  if (a.areas[CHUNK_ORDER].count <= SPARE_CHUNKS || later.n == std::size(later.items))
    return;
  frame_meta* m = &c->frames[0];
  if (!(m->flags & F_ZEROED))
    a.bytes_returned += CHUNK_SIZE;
  list_del(a, m);
  a.chunks_held--;
  set_region(c->base, nullptr);
  later.items[later.n++] = c;
}

// Releases the free runs of RELEASE_ORDER and more that hold old data.
size_t release_dirty_runs(allocator& a) {
  size_t released = 0;
  for (unsigned o = CHUNK_ORDER + 1; o-- > RELEASE_ORDER;) {
    for (frame_meta* m = a.areas[o].first; m; m = m->link.next) {
      if (m->flags & F_ZEROED)
        continue;
      size_t bytes = PAGE_SIZE << o;
      if (!release_range(a, page_of(m), bytes))
        continue;
      m->flags.fetch_or(F_ZEROED, std::memory_order_relaxed);
      a.dirty_large -= size_t{1} << o;
      released += bytes;
    }
  }
  a.bytes_returned += released;
  return released;
}

// After frees: give back what the policy says (lock held).
void after_free(allocator& a, chunk* emptied, unmap_list& later) {
  if (emptied)
    retire_chunk(a, emptied, later);
  if (a.dirty_large > RELEASE_AFTER_FRAMES)
    release_dirty_runs(a);
}

// A block of `order` from the free lists, mapping a chunk when they have none.
// Returns with the lock held when it succeeds.
frame_meta* take_block_mapping(allocator& a, gfp_t gfp, unsigned order, bool* zeroed) {
  if (!lock_for(a, gfp))
    return nullptr;
  for (;;) {
    if (frame_meta* m = take_block(a, order, zeroed))
      return m;
    a.lock.unlock();
    chunk* c = new_chunk(a);
    if (!c || !lock_for(a, gfp)) {
      if (c)
        delete_chunk(c);
      return nullptr;
    }
    if (!add_chunk(a, c)) {
      a.lock.unlock();
      delete_chunk(c);
      return nullptr;
    }
  }
}

}  // namespace

// --- Per-thread caches of order-0 frames --------------------------------------

// One a pool.
struct thread_cache {
  explicit thread_cache(unsigned pool) : pool_index(pool) {}
  const unsigned pool_index;
  frame_meta* frames[CACHE_CAPACITY];
  unsigned n = 0;
  std::atomic<unsigned> published{0};  // n, for the statistics of other threads
  thread_cache* next = nullptr;
  thread_cache* prev = nullptr;
  bool registered = false;

  void set_n(unsigned v) {
    n = v;
    published.store(v, std::memory_order_relaxed);
  }
  ~thread_cache();
};

namespace {

// Moves frames to the free lists until `keep` remain (lock held).
void drain_locked(allocator& a, thread_cache& tc, unsigned keep, unmap_list& later) {
  unsigned n = tc.n;
  while (n > keep) {
    frame_meta* m = tc.frames[--n];
    chunk* emptied = put_block(a, m, 0, m->flags & F_ZEROED);
    if (emptied)
      retire_chunk(a, emptied, later);
  }
  tc.set_n(n);
  if (a.dirty_large > RELEASE_AFTER_FRAMES)
    release_dirty_runs(a);
}

// Makes the cache's frames count as cached in the statistics (lock held).
void register_cache(allocator& a, thread_cache& tc) {
  if (tc.registered)
    return;
  tc.next = a.caches;
  if (a.caches)
    a.caches->prev = &tc;
  a.caches = &tc;
  tc.registered = true;
}

void unregister_cache(allocator& a, thread_cache& tc) {
  if (!tc.registered)
    return;
  (tc.prev ? tc.prev->next : a.caches) = tc.next;
  if (tc.next)
    tc.next->prev = tc.prev;
  tc.registered = false;
}

}  // namespace

thread_cache::~thread_cache() {
  if (!registered && !n)
    return;
  allocator& a = pool(pool_index);
  unmap_list later;
  std::lock_guard g(a.lock);
  drain_locked(a, *this, 0, later);
  unregister_cache(a, *this);
}

namespace {

thread_local thread_cache this_thread_caches[NR_POOLS] = {thread_cache(DEFAULT_POOL), thread_cache(SHARED_POOL)};

// Fills the cache with a batch. Returns false when not one frame was found.
bool refill(allocator& a, thread_cache& tc, gfp_t gfp) {
  bool zeroed;
  frame_meta* m = take_block_mapping(a, gfp, 0, &zeroed);
  if (!m)
    return false;
  register_cache(a, tc);
  unsigned n = tc.n;
  for (;;) {
    m->flags.store(F_CACHED | (zeroed ? F_ZEROED : 0), std::memory_order_relaxed);
    tc.frames[n++] = m;
    if (n == CACHE_BATCH || !(m = take_block(a, 0, &zeroed)))
      break;
  }
  a.lock.unlock();
  tc.set_n(n);
  return true;
}

page* alloc_order0(gfp_t gfp) {
  allocator& a = pool_for(gfp);
  thread_cache& tc = this_thread_caches[index_of(a)];
  if (!tc.n && !refill(a, tc, gfp))
    return nullptr;
  frame_meta* m = tc.frames[tc.n - 1];
  tc.set_n(tc.n - 1);
  return hand_out(m, page_of(m), 0, gfp, m->flags & F_ZEROED);
}

void free_order0(frame_meta* m) {
  IOV_POISON(page_of(m), PAGE_SIZE);
  allocator& a = *chunk_of(m)->pool;
  thread_cache& tc = this_thread_caches[index_of(a)];
  if (!tc.registered) {  // a thread that frees before it ever allocates
    std::lock_guard g(a.lock);
    register_cache(a, tc);
  }
  if (tc.n == CACHE_CAPACITY) {
    unmap_list later;
    std::lock_guard g(a.lock);
    drain_locked(a, tc, CACHE_CAPACITY - CACHE_BATCH, later);
  }
  m->flags.store(F_CACHED, std::memory_order_relaxed);
  tc.frames[tc.n] = m;
  tc.set_n(tc.n + 1);
}

}  // namespace

void page_alloc_lock_for_test() noexcept { pool(DEFAULT_POOL).lock.lock(); }
void page_alloc_unlock_for_test() noexcept { pool(DEFAULT_POOL).lock.unlock(); }

void free_allocation(frame_meta* head) noexcept {
  unsigned order = head->order;
  if (head->flags & F_DIRECT)
    return free_direct(head);
  if (order == 0)
    return free_order0(head);
  if (head->flags & F_COMPOUND)
    for (size_t i = 1; i < (size_t{1} << order); i++)
      head[i].flags.store(0, std::memory_order_relaxed);
  IOV_POISON(page_of(head), PAGE_SIZE << order);
  allocator& a = *chunk_of(head)->pool;
  unmap_list later;
  std::lock_guard g(a.lock);
  after_free(a, put_block(a, head, order, false), later);
}

}  // namespace internal

page* alloc_pages(gfp_t gfp, unsigned order) noexcept {
  using namespace internal;
  if (should_fail_alloc_page() || order > MAX_ORDER)
    return nullptr;
  if (order == 0)
    return alloc_order0(gfp);
  if (order > CHUNK_ORDER)
    return alloc_direct(gfp, order);
  allocator& a = pool_for(gfp);
  bool zeroed;
  frame_meta* m = take_block_mapping(a, gfp, order, &zeroed);
  if (!m)
    return nullptr;
  a.lock.unlock();
  return hand_out(m, page_of(m), order, gfp, zeroed);
}

// The statistics and the releases cover both pools.
page_alloc_stats page_alloc_read_stats() noexcept {
  using namespace internal;
  page_alloc_stats s{};
  for (unsigned k = 0; k < NR_POOLS; k++) {
    allocator& a = pool(k);
    std::lock_guard g(a.lock);
    size_t cached = 0;
    for (thread_cache* tc = a.caches; tc; tc = tc->next)
      cached += tc->published.load(std::memory_order_relaxed);
    s.frames_in_use += a.frames_out - cached + (a.direct_bytes >> PAGE_SHIFT);
    s.frames_cached += cached;
    s.frames_free += a.frames_free;
    s.chunks_held += a.chunks_held;
    s.direct_bytes += a.direct_bytes;
    s.bytes_returned += a.bytes_returned;
  }
  return s;
}

void page_alloc_drain_thread_cache() noexcept {
  using namespace internal;
  for (unsigned k = 0; k < NR_POOLS; k++) {
    allocator& a = pool(k);
    unmap_list later;
    std::lock_guard g(a.lock);
    drain_locked(a, this_thread_caches[k], 0, later);
  }
}

namespace internal {
namespace {

size_t release_free(allocator& a) {
  std::vector<chunk*> unmap;
  size_t returned;
  {
    std::lock_guard g(a.lock);
    size_t before = a.bytes_returned;
    unmap.reserve(a.areas[CHUNK_ORDER].count);
    // Every entirely free chunk goes, the spares included.
    while (frame_meta* m = a.areas[CHUNK_ORDER].first) {
      chunk* c = chunk_of(m);
      if (!(m->flags & F_ZEROED))
        a.bytes_returned += CHUNK_SIZE;
      list_del(a, m);
      a.chunks_held--;
      set_region(c->base, nullptr);
      unmap.push_back(c);
    }
    release_dirty_runs(a);
    returned = a.bytes_returned - before;
  }
  for (chunk* c : unmap)
    delete_chunk(c);
  return returned;
}

}  // namespace
}  // namespace internal

size_t page_alloc_release_free() noexcept {
  using namespace internal;
  return release_free(pool(DEFAULT_POOL)) + release_free(pool(SHARED_POOL));
}

}  // namespace iov
