// page_alloc_direct.cc: allocations above CHUNK_ORDER (4 MiB and more), each
// a naturally aligned mapping of its own with one descriptor, entered in the
// address table for every 2 MiB it covers.
#include <sys/mman.h>

#include <new>

#include "page_alloc_pool.hpp"

namespace iov::internal {
namespace {

void unmap_direct_memory(void* mem, size_t bytes, int fd) {
  if (fd >= 0)
    shared_direct_unmap(mem, bytes, fd);
  else
    munmap(mem, bytes);
}

}  // namespace

page* alloc_direct(gfp_t gfp, unsigned order) {
  size_t bytes = PAGE_SIZE << order;
  allocator& a = pool_for(gfp);
  int fd = -1;
  void* mem = a.shared ? shared_direct_map(bytes, &fd) : map_aligned(bytes, bytes);
  if (!mem)
    return nullptr;
  auto* d = new (std::nothrow) direct_mapping();
  if (!d || !lock_for(a, gfp)) {
    unmap_direct_memory(mem, bytes, fd);
    delete d;
    return nullptr;
  }
  d->kind = region_kind::direct;
  d->base = reinterpret_cast<uintptr_t>(mem);
  d->bytes = bytes;
  d->pool = &a;
  d->fd = fd;
  bool ok = true;
  for (size_t off = 0; off < bytes && ok; off += CHUNK_SIZE)
    ok = set_region(d->base + off, d);
  if (ok)
    a.direct_bytes += bytes;
  else
    for (size_t off = 0; off < bytes; off += CHUNK_SIZE)
      set_region(d->base + off, nullptr);
  a.lock.unlock();
  if (!ok) {
    unmap_direct_memory(mem, bytes, fd);
    delete d;
    return nullptr;
  }
  d->head.flags.store(F_DIRECT, std::memory_order_relaxed);
  return hand_out(&d->head, reinterpret_cast<page*>(d->base), order, gfp, true);
}

void free_direct(frame_meta* head) {
  auto* d = reinterpret_cast<direct_mapping*>(reinterpret_cast<unsigned char*>(head) -
                                              offsetof(direct_mapping, head));
  allocator& a = *d->pool;
  {
    std::lock_guard g(a.lock);
    for (size_t off = 0; off < d->bytes; off += CHUNK_SIZE)
      set_region(d->base + off, nullptr);
    a.direct_bytes -= d->bytes;
    a.bytes_returned += d->bytes;
  }
  unmap_direct_memory(reinterpret_cast<void*>(d->base), d->bytes, d->fd);
  delete d;
}

}  // namespace iov::internal
