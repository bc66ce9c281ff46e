// page.hpp: pages (4 KiB frames), the GFP flags, their allocation and
// reference counts, and the arithmetic between a frame and its address (the
// kernel's mm.h, gfp.h and gfp_types.h; the mapping and copy helpers of
// highmem.h are in highmem.hpp, folios in folio.hpp).
//
// Any 4 KiB-aligned memory is made of frames: a `page` object IS its frame
// (sizeof(page) == PAGE_SIZE), so `page + n` walks contiguous frames as in the
// kernel, virt_to_page() names the frame of any address, and a bio_vec can
// describe a page of a user buffer as well as one from alloc_page(). What the
// kernel keeps in struct page (the reference count, the order of a compound
// page) the allocator keeps beside its frames (docs/memory.md); a frame it did
// not hand out has no such state: get_page()/put_page() leave it alone and
// page_ref_count() reports the owner's single reference.
//
//   iov::page* p = iov::alloc_page(iov::GFP_KERNEL | iov::__GFP_ZERO);
//   char* addr = iov::page_address(p);
//   iov::get_page(p);   // lent out: the frame outlives the next put
//   iov::put_page(p);
//   iov::__free_page(p);
//
// The arithmetic is header-only; the allocation functions and the reference
// counts need the compiled library (src/page_alloc.cc).
#pragma once

#include <concepts>
#include <cstdint>
#include <cstdlib>

#include "iov/config.hpp"
#include "iov/void_ptr.hpp"

namespace iov {

inline constexpr size_t PAGE_SHIFT = 12, PAGE_SIZE = 4096, SECTOR_SHIFT = 9, SECTOR_SIZE = 512;
inline constexpr size_t PAGE_MASK = ~(PAGE_SIZE - 1);  // as the kernel's: clears the offset bits

using pgoff_t = unsigned long;  // a page index in a file or device

// The kernel's flags (gfp_types.h, with its bit positions). What they mean
// here: __GFP_ZERO zeroes; without __GFP_DIRECT_RECLAIM (GFP_NOWAIT,
// GFP_ATOMIC) the allocator never sleeps and fails rather than wait; __GFP_COMP
// makes a compound page (compound_head/compound_order, folios). The others are
// accepted and mean nothing in user space (there is no highmem, no zone, no
// reclaim); __GFP_NOWARN is what happens anyway (a failure prints nothing).
using gfp_t = unsigned;
inline constexpr gfp_t __GFP_DMA = 1u << 0, __GFP_HIGHMEM = 1u << 1, __GFP_DMA32 = 1u << 2,
                       __GFP_MOVABLE = 1u << 3, __GFP_RECLAIMABLE = 1u << 4, __GFP_HIGH = 1u << 5,
                       __GFP_IO = 1u << 6, __GFP_FS = 1u << 7, __GFP_ZERO = 1u << 8,
                       __GFP_DIRECT_RECLAIM = 1u << 10, __GFP_KSWAPD_RECLAIM = 1u << 11,
                       __GFP_WRITE = 1u << 12, __GFP_NOWARN = 1u << 13, __GFP_RETRY_MAYFAIL = 1u << 14,
                       __GFP_NOFAIL = 1u << 15, __GFP_NORETRY = 1u << 16, __GFP_MEMALLOC = 1u << 17,
                       __GFP_COMP = 1u << 18, __GFP_NOMEMALLOC = 1u << 19, __GFP_HARDWALL = 1u << 20,
                       __GFP_THISNODE = 1u << 21, __GFP_ACCOUNT = 1u << 22;
// iov's own flag, on a bit the kernel leaves unused: frames that vmap()
// (vmalloc.hpp) can map a second time. They come from a pool of shared
// memory (a memfd) beside the default one of private anonymous memory,
// which vmap() cannot alias; docs/memory.md gives what each costs.
inline constexpr gfp_t __GFP_VMAPPABLE = 1u << 30;
inline constexpr gfp_t __GFP_RECLAIM = __GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM;
inline constexpr gfp_t GFP_ATOMIC = __GFP_HIGH | __GFP_KSWAPD_RECLAIM,
                       GFP_KERNEL = __GFP_RECLAIM | __GFP_IO | __GFP_FS,
                       GFP_KERNEL_ACCOUNT = GFP_KERNEL | __GFP_ACCOUNT,
                       GFP_NOWAIT = __GFP_KSWAPD_RECLAIM | __GFP_NOWARN, GFP_NOIO = __GFP_RECLAIM,
                       GFP_NOFS = __GFP_RECLAIM | __GFP_IO,
                       GFP_USER = __GFP_RECLAIM | __GFP_IO | __GFP_FS | __GFP_HARDWALL,
                       GFP_HIGHUSER = GFP_USER | __GFP_HIGHMEM,
                       GFP_HIGHUSER_MOVABLE = GFP_HIGHUSER | __GFP_MOVABLE;

// gfpflags_allow_blocking: whether an allocation may sleep.
inline constexpr bool gfpflags_allow_blocking(gfp_t gfp) { return gfp & __GFP_DIRECT_RECLAIM; }

struct alignas(PAGE_SIZE) page {
  unsigned char frame[PAGE_SIZE];
};
static_assert(sizeof(page) == PAGE_SIZE);

// 2^order contiguous frames aligned to their size, or nullptr. Orders up to
// 9 (2 MiB) come from the allocator's chunks, larger ones from a mapping of
// their own. The allocation holds one reference, on its first frame.
page* alloc_pages(gfp_t gfp, unsigned order) noexcept;
inline page* alloc_page(gfp_t gfp = GFP_KERNEL) noexcept { return alloc_pages(gfp, 0); }

// Drops the allocation's reference; the frames go back when it was the last
// (the kernel's __free_pages). order must be the allocation's. free_pages and
// free_page are the same functions under the names iov has always used (the
// kernel's free_pages takes an address).
void __free_pages(page* p, unsigned order) noexcept;
inline void __free_page(page* p) noexcept { __free_pages(p, 0); }
inline void free_pages(page* p, unsigned order) noexcept { __free_pages(p, order); }
inline void free_page(page* p) noexcept { __free_pages(p, 0); }

// Reference counts (mm.h). A compound page has one count, on its head: a tail
// page's get/put count there. put_page() of the last reference frees the
// allocation. On a frame the allocator did not hand out they do nothing.
void get_page(page* p) noexcept;
void put_page(page* p) noexcept;
int page_ref_count(const page* p) noexcept;
// A reference unless the count has already dropped to zero (the page is
// being freed): what a lockless lookup takes under RCU before it rechecks
// that the page is still where it found it (brd_lookup_page).
bool get_page_unless_zero(page* p) noexcept;

// The head of the compound page that holds p (p itself when p is not part of
// one), and a compound page's order (0 for anything else, as the kernel's).
page* compound_head(const page* p) noexcept;
unsigned compound_order(const page* p) noexcept;

// Fills the nullptr entries of page_array[0, nr_pages) with single pages and
// returns how many entries hold a page, stopping at the first failure (the
// kernel's, 6.14 on; the pages are the caller's, each to be freed).
unsigned long alloc_pages_bulk(gfp_t gfp, unsigned long nr_pages, page** page_array) noexcept;
// put_page() of each of nr pages (the kernel's; nullptr entries skipped).
void release_pages(page** pages, int nr) noexcept;

inline page* nth_page(page* p, size_t n) { return p + n; }

// PAGE_ALIGN: up to the next page boundary (the kernel's macro, for numbers).
template <std::integral T>
inline constexpr T PAGE_ALIGN(T addr) {
  return static_cast<T>((addr + static_cast<T>(PAGE_SIZE - 1)) & ~static_cast<T>(PAGE_SIZE - 1));
}

// A frame's number is its address over PAGE_SIZE: frames are memory here.
inline unsigned long page_to_pfn(const page* p) { return reinterpret_cast<uintptr_t>(p) >> PAGE_SHIFT; }
inline page* pfn_to_page(unsigned long pfn) { return reinterpret_cast<page*>(uintptr_t{pfn} << PAGE_SHIFT); }
// There is no highmem in user space.
inline bool PageHighMem(const page*) { return false; }

// What iov_iter_extract_pages() would have pinned: nothing is pinned in user
// space (iov_iter_extract_will_pin() is false), so these release nothing;
// they exist so that the kernel's unpin branch compiles.
inline void unpin_user_page(page*) {}
inline void unpin_user_pages(page**, unsigned long) {}
// A void_ptr (void_ptr.hpp) as the mappings in highmem.hpp: what C callers
// assign to a char* or offset by bytes without a cast.
inline void_ptr page_address(const page* p) { return void_ptr(const_cast<page*>(p)); }
inline void_ptr lowmem_page_address(const page* p) { return page_address(p); }
inline void_ptr page_to_virt(const page* p) { return page_address(p); }
inline page* virt_to_page(const void* addr) {
  return reinterpret_cast<page*>(reinterpret_cast<uintptr_t>(addr) & PAGE_MASK);
}
inline size_t offset_in_page(const void* addr) {
  return reinterpret_cast<uintptr_t>(addr) & (PAGE_SIZE - 1);
}
template <std::integral Offset>
inline size_t offset_in_page(Offset off) {
  return static_cast<size_t>(off) & (PAGE_SIZE - 1);
}

}  // namespace iov
