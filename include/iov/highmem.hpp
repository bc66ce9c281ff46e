// highmem.hpp: mapping a page and the copy helpers of the kernel's
// include/linux/highmem.h.
//
// There is no highmem in user space: kmap_local_page() is page_address() and
// kunmap_local() does nothing (nor do kmap()/kmap_atomic() and their unmaps),
// so code ported from the kernel keeps its map/unmap pairs and they cost
// nothing. The mappings return a void_ptr (void_ptr.hpp), so kernel code that
// assigns the address to a typed pointer or offsets it by bytes (GNU C's
// void* arithmetic) ports without casts; any address inside the mapping may
// be passed to the unmap, as in the kernel.
//
//   iov::memcpy_to_page(p, 512, buf, 1024);     // bounds: off + len <= PAGE_SIZE
//   char* addr = iov::kmap_local_page(p);
//   memcpy(iov::kmap_local_page(p) + 512, buf, 1024);
//   iov::kunmap_local(addr + 100);
#pragma once

#include <cstddef>
#include <cstring>

#include "iov/config.hpp"
#include "iov/page.hpp"

namespace iov {

inline void_ptr kmap_local_page(page* p) { return page_address(p); }
inline void kunmap_local(const void*) {}

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

// The kernel's take char*; void* accepts what C callers pass.
inline void memcpy_to_page(page* p, size_t offset, const void* from, size_t len) {
  if (IOV_BUG_ON(IOV_PAGE_RANGE_BAD(offset, len), "memcpy_to_page: offset + len > PAGE_SIZE"))
    return;
  char* to = static_cast<char*>(kmap_local_page(p));
  std::memcpy(to + offset, from, internal::unbounded(len));
  kunmap_local(to);
}

inline void memcpy_from_page(void* to, page* p, size_t offset, size_t len) {
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

// --- The rest of highmem.h -------------------------------------------------------

// kmap() and kmap_atomic() are kmap_local_page(); their unmaps do nothing.
// kunmap() takes the page, kunmap_atomic() the address, as the kernel's.
inline void_ptr kmap(page* p) { return page_address(p); }
inline void kunmap(page*) {}
inline void_ptr kmap_atomic(page* p) { return page_address(p); }
inline void kunmap_atomic(const void*) {}

// Nothing to do: user space has no aliasing data cache to write back.
inline void flush_dcache_page(page*) {}

inline void clear_highpage(page* p) {
  void* kaddr = kmap_local_page(p);
  std::memset(kaddr, 0, PAGE_SIZE);
  kunmap_local(kaddr);
}

inline void copy_highpage(page* to, page* from) {
  void* vto = kmap_local_page(to);
  void* vfrom = kmap_local_page(from);
  std::memcpy(vto, vfrom, PAGE_SIZE);
  kunmap_local(vfrom);
  kunmap_local(vto);
}

// Zeroes [start1, end1) and [start2, end2) of the page; an empty or inverted
// range is skipped, as the kernel's. An end past the page is its BUG_ON.
inline void zero_user_segments(page* p, unsigned start1, unsigned end1, unsigned start2, unsigned end2) {
  if (IOV_BUG_ON(end1 > PAGE_SIZE || end2 > PAGE_SIZE, "zero_user_segments: end > PAGE_SIZE"))
    return;
  char* kaddr = static_cast<char*>(kmap_local_page(p));
  if (end1 > start1)
    std::memset(kaddr + start1, 0, internal::unbounded(end1 - start1));
  if (end2 > start2)
    std::memset(kaddr + start2, 0, internal::unbounded(end2 - start2));
  kunmap_local(kaddr);
}

inline void zero_user_segment(page* p, unsigned start, unsigned end) { zero_user_segments(p, start, end, 0, 0); }

#undef IOV_PAGE_RANGE_BAD

}  // namespace iov
