// highmem.hpp: mapping a page and the copy helpers of the kernel's
// include/linux/highmem.h.
//
// There is no highmem in user space: kmap_local_page() is page_address() and
// kunmap_local() does nothing, so code ported from the kernel keeps its
// map/unmap pairs and they cost nothing.
//
//   iov::memcpy_to_page(p, 512, buf, 1024);     // bounds: off + len <= PAGE_SIZE
//   char* addr = static_cast<char*>(iov::kmap_local_page(p));
//   iov::kunmap_local(addr);
#pragma once

#include <cstddef>
#include <cstring>

#include "iov/config.hpp"
#include "iov/page.hpp"

namespace iov {

inline void* kmap_local_page(page* p) { return page_address(p); }
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
