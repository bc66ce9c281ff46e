// page.hpp: pages (4 KiB frames), their allocation and mapping, and the
// kernel's highmem.h copy helpers.
//
// Any 4 KiB-aligned memory is made of frames: a `page` object IS its frame
// (sizeof(page) == PAGE_SIZE), so `page + n` walks contiguous frames as in the
// kernel, virt_to_page() names the frame of any address, and a bio_vec can
// describe a page of a user buffer as well as one from alloc_page(). There is
// no highmem in user space: kmap_local_page() is page_address().
//
//   iov::page* p = iov::alloc_page(iov::GFP_KERNEL);
//   iov::memcpy_to_page(p, 512, buf, 1024);     // bounds: off + len <= PAGE_SIZE
//   iov::free_page(p);
#pragma once

#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <cstring>

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
inline void* kmap_local_page(page* p) { return page_address(p); }
inline void kunmap_local(const void*) {}
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

// highmem.h. Each helper stays within one page; off + len > PAGE_SIZE is the
// kernel's VM_BUG_ON: the call does nothing (or aborts with IOV_CHECKS on).
// The sum is checked without overflow so a huge len cannot wrap past the test.
// The check bounds len; internal::unbounded() keeps the C library's copy.
#define IOV_PAGE_RANGE_BAD(off, len) ((off) > PAGE_SIZE || (len) > PAGE_SIZE - (off))

inline void memcpy_page(page* dst, size_t dst_off, page* src, size_t src_off, size_t len) {
  if (IOV_BUG_ON(IOV_PAGE_RANGE_BAD(dst_off, len) || IOV_PAGE_RANGE_BAD(src_off, len),
                 "memcpy_page: off + len > PAGE_SIZE"))
    return;
  std::memmove(static_cast<char*>(kmap_local_page(dst)) + dst_off,
               static_cast<char*>(kmap_local_page(src)) + src_off, internal::unbounded(len));
}

inline void memcpy_to_page(page* p, size_t offset, const char* from, size_t len) {
  if (IOV_BUG_ON(IOV_PAGE_RANGE_BAD(offset, len), "memcpy_to_page: offset + len > PAGE_SIZE"))
    return;
  char* to = static_cast<char*>(kmap_local_page(p));
  std::memcpy(to + offset, from, internal::unbounded(len));
  kunmap_local(to);
}

inline void memcpy_from_page(char* to, page* p, size_t offset, size_t len) {
  if (IOV_BUG_ON(IOV_PAGE_RANGE_BAD(offset, len), "memcpy_from_page: offset + len > PAGE_SIZE"))
    return;
  char* from = static_cast<char*>(kmap_local_page(p));
  std::memcpy(to, from + offset, internal::unbounded(len));
  kunmap_local(from);
}

inline void memset_page(page* p, size_t offset, int val, size_t len) {
  if (IOV_BUG_ON(IOV_PAGE_RANGE_BAD(offset, len), "memset_page: offset + len > PAGE_SIZE"))
    return;
  char* addr = static_cast<char*>(kmap_local_page(p));
  std::memset(addr + offset, val, internal::unbounded(len));
  kunmap_local(addr);
}

inline void memzero_page(page* p, size_t offset, size_t len) { memset_page(p, offset, 0, len); }

inline void zero_user(page* p, unsigned start, unsigned size) {
  if (IOV_BUG_ON(IOV_PAGE_RANGE_BAD(size_t{start}, size_t{size}), "zero_user: start + size > PAGE_SIZE"))
    return;
  std::memset(static_cast<char*>(kmap_local_page(p)) + start, 0, internal::unbounded(size));
}

#undef IOV_PAGE_RANGE_BAD

}  // namespace iov
