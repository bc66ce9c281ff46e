// page_region.cc: the page allocator's address space (docs/memory.md): the
// table from an address to the descriptor of the chunk or direct mapping
// that holds it (what virt_to_page's metadata lookup and the frees use), and
// the aligned mappings the pools take their frames from.
#include <sys/mman.h>

#include <new>

#include "page_alloc_internal.hpp"

namespace iov::internal {
namespace {

// The table from address / 2 MiB to descriptor: 47-bit user addresses, two
// levels of 2^13 entries; a leaf covers 16 GiB.
constexpr unsigned SLOT_SHIFT = 21, LEAF_BITS = 13, ADDRESS_BITS = 47;
constexpr size_t TOP_ENTRIES = size_t{1} << (ADDRESS_BITS - SLOT_SHIFT - LEAF_BITS);
constexpr size_t LEAF_ENTRIES = size_t{1} << LEAF_BITS;
struct leaf {
  std::atomic<void*> slots[LEAF_ENTRIES];
};
std::atomic<leaf*> region_table[TOP_ENTRIES];

}  // namespace

bool set_region(uintptr_t addr, void* r) noexcept {
  size_t top = addr >> (SLOT_SHIFT + LEAF_BITS);
  if (top >= TOP_ENTRIES)
    return false;
  leaf* l = region_table[top].load(std::memory_order_acquire);
  if (!l) {
    auto* fresh = new (std::nothrow) leaf{};
    if (!fresh)
      return false;
    // Each pool writes under its own lock: two may publish a leaf at once.
    if (region_table[top].compare_exchange_strong(l, fresh, std::memory_order_acq_rel))
      l = fresh;
    else
      delete fresh;
  }
  l->slots[(addr >> SLOT_SHIFT) & (LEAF_ENTRIES - 1)].store(r, std::memory_order_release);
  return true;
}

void* region_of(uintptr_t addr) noexcept {
  size_t top = addr >> (SLOT_SHIFT + LEAF_BITS);
  if (top >= TOP_ENTRIES)
    return nullptr;
  leaf* l = region_table[top].load(std::memory_order_acquire);
  return l ? l->slots[(addr >> SLOT_SHIFT) & (LEAF_ENTRIES - 1)].load(std::memory_order_acquire) : nullptr;
}

void* map_aligned(size_t bytes, size_t align, int fd, int64_t file_offset) noexcept {
  size_t span = bytes + align;
  // A file's frames go over a reservation; anonymous ones are the reservation.
  int prot = fd < 0 ? PROT_READ | PROT_WRITE : PROT_NONE;
  void* raw = mmap(nullptr, span, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (start + align - 1) & ~(align - 1);
  if (aligned > start)
    munmap(raw, aligned - start);
  if (uintptr_t end = start + span, used_end = aligned + bytes; end > used_end)
    munmap(reinterpret_cast<void*>(used_end), end - used_end);
  if (fd >= 0 && mmap(reinterpret_cast<void*>(aligned), bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                      static_cast<off_t>(file_offset)) == MAP_FAILED) {
    munmap(reinterpret_cast<void*>(aligned), bytes);
    return nullptr;
  }
  // Huge TLB entries where THP allows it (for a memfd, where shmem_enabled
  // does); without THP the call fails and the frames are ordinary 4 KiB pages.
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace iov::internal
