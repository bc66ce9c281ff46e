// vmalloc.cc: vmap() and vmalloc() (vmalloc.hpp). A 16 GiB range of address
// space is reserved (PROT_NONE) at the first call; an area is a run of it,
// first fit, one guard page longer than its pages. vmap() maps each page's
// memfd range (page_alloc_shared.cc) over the area's reservation with
// MAP_FIXED, one mmap per run of pages adjacent in the file, and fills the
// range's page table that vmalloc_to_page() reads; vunmap() puts the
// reservation back. The lock guards the free list and the areas; the mmap
// calls run outside it, on a range that only its area's owner touches.
#include "iov/vmalloc.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>

#include "iov/config.hpp"
#include "page_alloc_internal.hpp"

namespace iov {
namespace {

using internal::VMALLOC_BYTES;

struct vm_area {
  size_t size;  // bytes, the guard page included
  unsigned long flags;
  page** pages;  // owned with VM_MAP_PUT_PAGES (or vmalloc): put and freed by vfree
  unsigned int nr_pages;
};

struct vmalloc_space {
  uintptr_t start, end;
  page** pages;  // what internal::vmalloc_pages publishes
};

struct vmalloc_state {
  std::mutex lock;
  vmalloc_space space{};
  std::map<uintptr_t, size_t> free_runs;        // start -> bytes, never adjacent
  std::unordered_map<uintptr_t, vm_area> areas;  // by start
};

vmalloc_state& state() {
  static auto* s = new vmalloc_state;  // never destroyed: threads may exit after main
  return *s;
}

void* reserve(void* at, size_t bytes) {
  int fixed = at ? MAP_FIXED : 0;
  return mmap(at, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed, -1, 0);
}

// The range and its table, on first use (lock held).
bool ensure_space(vmalloc_state& s) {
  if (s.space.start)
    return true;
  void* range = reserve(nullptr, VMALLOC_BYTES);
  if (range == MAP_FAILED)
    return false;
  void* table = mmap(nullptr, (VMALLOC_BYTES >> PAGE_SHIFT) * sizeof(page*), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (table == MAP_FAILED) {
    munmap(range, VMALLOC_BYTES);
    return false;
  }
  s.space = {reinterpret_cast<uintptr_t>(range), reinterpret_cast<uintptr_t>(range) + VMALLOC_BYTES,
             static_cast<page**>(table)};
  s.free_runs.emplace(s.space.start, VMALLOC_BYTES);
  internal::vmalloc_pages.store(s.space.pages, std::memory_order_relaxed);
  internal::vmalloc_start.store(s.space.start, std::memory_order_release);
  return true;
}

// First fit (lock held); 0 when no run is long enough.
uintptr_t take_run(vmalloc_state& s, size_t bytes) {
  for (auto it = s.free_runs.begin(); it != s.free_runs.end(); ++it) {
    if (it->second < bytes)
      continue;
    uintptr_t start = it->first;
    size_t left = it->second - bytes;
    s.free_runs.erase(it);
    if (left)
      s.free_runs.emplace(start + bytes, left);
    return start;
  }
  return 0;
}

// Returns a run, merged with its free neighbours (lock held).
void give_run(vmalloc_state& s, uintptr_t start, size_t bytes) {
  auto next = s.free_runs.lower_bound(start);
  if (next != s.free_runs.end() && next->first == start + bytes) {
    bytes += next->second;
    next = s.free_runs.erase(next);
  }
  if (next != s.free_runs.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += bytes;
      return;
    }
  }
  s.free_runs.emplace(start, bytes);
}

page** table_at(const vmalloc_state& s, uintptr_t addr) { return s.space.pages + ((addr - s.space.start) >> PAGE_SHIFT); }

// Maps pages[0, count) at addr, a run of the file at a time. False when a
// mapping failed; what was mapped is the caller's to put back.
bool map_pages(uintptr_t addr, page** pages, unsigned int count, int prot) {
  for (unsigned int k = 0; k < count;) {
    int fd;
    int64_t off;
    if (!internal::frame_backing(pages[k], &fd, &off))
      return false;
    unsigned int run = 1;
    for (int next_fd; k + run < count; run++) {
      int64_t next_off;
      if (!internal::frame_backing(pages[k + run], &next_fd, &next_off) || next_fd != fd ||
          next_off != off + static_cast<int64_t>(run * PAGE_SIZE))
        break;
    }
    void* at = reinterpret_cast<void*>(addr + k * PAGE_SIZE);
    if (mmap(at, run * PAGE_SIZE, prot, MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(off)) == MAP_FAILED)
      return false;
    k += run;
  }
  return true;
}

// Puts the reservation back over an area and clears its table.
void unmap_area(vmalloc_state& s, uintptr_t addr, size_t bytes) {
  reserve(reinterpret_cast<void*>(addr), bytes);
  std::fill(table_at(s, addr), table_at(s, addr + bytes), nullptr);
}

// Removes the area at addr and returns it; false when there is none.
bool remove_area(const void* addr, vm_area* out) {
  vmalloc_state& s = state();
  uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  {
    std::lock_guard g(s.lock);
    auto it = s.areas.find(start);
    if (IOV_BUG_ON(it == s.areas.end(), "vunmap/vfree: not an address vmap() or vmalloc() returned"))
      return false;
    *out = it->second;
    s.areas.erase(it);
  }
  unmap_area(s, start, out->size);
  std::lock_guard g(s.lock);
  give_run(s, start, out->size);
  return true;
}

}  // namespace

void* vmap(page** pages, unsigned int count, unsigned long flags, pgprot_t prot) noexcept {
  if (count == 0 || count > VMALLOC_BYTES / PAGE_SIZE - 1)
    return nullptr;
  int fd;
  int64_t off;
  for (unsigned int k = 0; k < count; k++)
    if (!pages[k] || !internal::frame_backing(pages[k], &fd, &off))
      return nullptr;
  vmalloc_state& s = state();
  size_t bytes = (size_t{count} + 1) * PAGE_SIZE;  // and the guard page
  uintptr_t addr;
  {
    std::lock_guard g(s.lock);
    if (!ensure_space(s) || !(addr = take_run(s, bytes)))
      return nullptr;
  }
  bool mapped = map_pages(addr, pages, count, static_cast<int>(pgprot_val(prot)));
  if (mapped) {
    std::copy(pages, pages + count, table_at(s, addr));
    std::lock_guard g(s.lock);
    bool owns = flags & VM_MAP_PUT_PAGES;
    mapped = s.areas.try_emplace(addr, vm_area{bytes, flags, owns ? pages : nullptr, owns ? count : 0}).second;
    if (mapped)
      return reinterpret_cast<void*>(addr);
  }
  unmap_area(s, addr, bytes);
  std::lock_guard g(s.lock);
  give_run(s, addr, bytes);
  return nullptr;
}

void vunmap(const void* addr) noexcept {
  vm_area area;
  if (addr)
    remove_area(addr, &area);
}

void vfree(const void* addr) noexcept {
  vm_area area;
  if (!addr || !remove_area(addr, &area))
    return;
  for (unsigned int k = 0; k < area.nr_pages; k++)
    __free_page(area.pages[k]);
  std::free(area.pages);  // kvfree
}

namespace {

void* vmalloc_gfp(unsigned long size, gfp_t gfp) {
  if (size == 0 || size > VMALLOC_BYTES)
    return nullptr;
  auto count = static_cast<unsigned int>((size + PAGE_SIZE - 1) >> PAGE_SHIFT);
  auto** pages = static_cast<page**>(std::calloc(count, sizeof(page*)));
  if (!pages)
    return nullptr;
  void* addr = nullptr;
  if (alloc_pages_bulk(gfp | __GFP_VMAPPABLE, count, pages) == count)
    addr = vmap(pages, count, VM_ALLOC | VM_MAP_PUT_PAGES, PAGE_KERNEL);
  if (!addr) {
    release_pages(pages, static_cast<int>(count));
    std::free(pages);
  }
  return addr;
}

}  // namespace

void* vmalloc(unsigned long size) noexcept { return vmalloc_gfp(size, GFP_KERNEL); }
void* vzalloc(unsigned long size) noexcept { return vmalloc_gfp(size, GFP_KERNEL | __GFP_ZERO); }

}  // namespace iov
