// folio.hpp: folios, the kernel's name for a compound page seen as one unit
// (mm.h, mm_types.h, and the folio helpers of highmem.h).
//
// A folio overlays its head page as in the kernel: a folio* and the page* of
// its first frame are the same address, &folio->page is that page, and the
// frames that follow are folio_page(folio, n) == &folio->page + n. The order
// and the reference count are the allocator's (page.hpp): folio_alloc() makes
// a compound allocation, and folio_put() of the last reference frees it. Any
// page not from the allocator is a folio of one page, as a page of a user
// buffer is.
//
//   iov::folio* f = iov::folio_alloc(iov::GFP_KERNEL | iov::__GFP_ZERO, 2);   // 16 KiB
//   iov::memcpy_to_folio(f, 5000, buf, 100);
//   iov::bio_vec bv;
//   iov::bvec_set_folio(&bv, f, iov::folio_size(f), 0);
//   iov::folio_put(f);
//
// copy_folio_to_iter() and its siblings are with the other copies, in copy.hpp.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstring>

#include "iov/config.hpp"
#include "iov/highmem.hpp"
#include "iov/page.hpp"

namespace iov {

struct alignas(PAGE_SIZE) folio {
  struct page page;  // the head page: &folio->page == (page*)folio
};
static_assert(sizeof(folio) == PAGE_SIZE && alignof(folio) == PAGE_SIZE);

inline folio* page_folio(const page* p) { return reinterpret_cast<folio*>(compound_head(p)); }
inline page* folio_page(folio* f, unsigned long n) { return &f->page + n; }
inline const page* folio_page(const folio* f, unsigned long n) { return &f->page + n; }

inline unsigned folio_order(const folio* f) { return compound_order(&f->page); }
inline unsigned long folio_nr_pages(const folio* f) { return 1ul << folio_order(f); }
inline size_t folio_size(const folio* f) { return PAGE_SIZE << folio_order(f); }
inline void_ptr folio_address(const folio* f) { return page_address(&f->page); }
inline bool folio_test_large(const folio* f) { return folio_order(f) > 0; }

inline void folio_get(folio* f) { get_page(&f->page); }
inline void folio_put(folio* f) { put_page(&f->page); }
inline int folio_ref_count(const folio* f) { return page_ref_count(&f->page); }

// A compound allocation of 2^order frames (the kernel adds __GFP_COMP too).
inline folio* folio_alloc(gfp_t gfp, unsigned order) {
  return reinterpret_cast<folio*>(alloc_pages(gfp | __GFP_COMP, order));
}

// The address of byte `offset` of the folio (mapped as a whole: no highmem).
inline void_ptr kmap_local_folio(folio* f, size_t offset) {
  return kmap_local_page(folio_page(f, offset / PAGE_SIZE)) + offset % PAGE_SIZE;
}

// highmem.h. offset + len beyond the folio is the kernel's VM_BUG_ON: the
// call does nothing (or aborts with IOV_CHECKS on). `from`/`to` accept any
// object pointer, as C callers pass them.
#define IOV_FOLIO_RANGE_BAD(f, off, len) ((off) > folio_size(f) || (len) > folio_size(f) - (off))

inline void memcpy_to_folio(folio* f, size_t offset, const void* from, size_t len) {
  if (IOV_BUG_ON(IOV_FOLIO_RANGE_BAD(f, offset, len), "memcpy_to_folio: offset + len > folio_size"))
    return;
  char* to = static_cast<char*>(kmap_local_folio(f, offset));
  std::memcpy(to, from, internal::unbounded(len));
  kunmap_local(to);
}

inline void memcpy_from_folio(void* to, folio* f, size_t offset, size_t len) {
  if (IOV_BUG_ON(IOV_FOLIO_RANGE_BAD(f, offset, len), "memcpy_from_folio: offset + len > folio_size"))
    return;
  const char* from = static_cast<const char*>(kmap_local_folio(f, offset));
  std::memcpy(to, from, internal::unbounded(len));
  kunmap_local(from);
}

inline void folio_zero_range(folio* f, size_t start, size_t length) {
  if (IOV_BUG_ON(IOV_FOLIO_RANGE_BAD(f, start, length), "folio_zero_range: start + length > folio_size"))
    return;
  std::memset(kmap_local_folio(f, start), 0, internal::unbounded(length));
}

// folio_zero_segment: zeroes [start, xend) of the folio.
inline void folio_zero_segment(folio* f, size_t start, size_t xend) {
  if (xend > start)
    folio_zero_range(f, start, xend - start);
}

#undef IOV_FOLIO_RANGE_BAD

// The folio after this one in memory (its frames are contiguous).
inline folio* folio_next(folio* f) { return reinterpret_cast<folio*>(folio_page(f, folio_nr_pages(f))); }
// The offset of address p within the folio that holds it.
inline size_t offset_in_folio(const folio* f, const void* p) {
  return reinterpret_cast<uintptr_t>(p) & (folio_size(f) - 1);
}
// The offset of file position pos within a folio of the file (the kernel's
// macro takes an address or a position alike).
template <std::integral T>
inline size_t offset_in_folio(const folio* f, T pos) {
  return static_cast<size_t>(pos) & (folio_size(f) - 1);
}
inline bool folio_test_highmem(const folio*) { return false; }

// Copies from the folio holding file position pos, up to len bytes and no
// further than the folio's end; returns the bytes copied. No highmem, so the
// kernel's one-page limit for highmem folios never applies.
inline size_t memcpy_from_file_folio(char* to, folio* f, loff_t pos, size_t len) {
  size_t offset = offset_in_folio(f, pos);
  len = std::min(len, folio_size(f) - offset);
  std::memcpy(to, static_cast<const char*>(folio_address(f)) + offset, len);
  return len;
}

}  // namespace iov
