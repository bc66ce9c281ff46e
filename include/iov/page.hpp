// page.hpp: pages (4 KiB frames), their allocation, and the arithmetic
// between a frame and its address (the kernel's mm.h and gfp.h; the mapping
// and copy helpers of highmem.h are in highmem.hpp).
//
// Any 4 KiB-aligned memory is made of frames: a `page` object IS its frame
// (sizeof(page) == PAGE_SIZE), so `page + n` walks contiguous frames as in the
// kernel, virt_to_page() names the frame of any address, and a bio_vec can
// describe a page of a user buffer as well as one from alloc_page().
//
//   iov::page* p = iov::alloc_page(iov::GFP_KERNEL);
//   char* addr = static_cast<char*>(iov::page_address(p));
//   iov::free_page(p);
#pragma once

#include <concepts>
#include <cstdint>
#include <cstdlib>

#include "iov/config.hpp"

namespace iov {

inline constexpr size_t PAGE_SHIFT = 12, PAGE_SIZE = 4096, SECTOR_SHIFT = 9, SECTOR_SIZE = 512;
inline constexpr size_t PAGE_MASK = ~(PAGE_SIZE - 1);  // as the kernel's: clears the offset bits

using gfp_t = unsigned;  // accepted for source compatibility, ignored
inline constexpr gfp_t GFP_KERNEL = 0, GFP_NOIO = 0, GFP_ATOMIC = 0;

struct alignas(PAGE_SIZE) page {
  unsigned char frame[PAGE_SIZE];
};
static_assert(sizeof(page) == PAGE_SIZE);

inline page* alloc_pages(gfp_t, unsigned order) {
  return static_cast<page*>(std::aligned_alloc(PAGE_SIZE, PAGE_SIZE << order));
}
inline page* alloc_page(gfp_t gfp = GFP_KERNEL) { return alloc_pages(gfp, 0); }
// The kernel's __free_pages/__free_page (names with "__" are reserved in C++).
inline void free_pages(page* p, unsigned /*order*/) { std::free(p); }
inline void free_page(page* p) { std::free(p); }

inline page* nth_page(page* p, size_t n) { return p + n; }
inline void* page_address(const page* p) { return const_cast<page*>(p); }
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
