// extract.hpp: an iterator's memory handed out as pages or iovecs, for I/O
// that must name the memory rather than copy it (the kernel's
// iov_iter_extract_pages(); iov_iter_to_iovecs() is user space's own, for
// sendmsg and writev).
//
//   iov::page* pages[16];
//   iov::page** p = pages;
//   size_t off;
//   ssize_t n = iov::iov_iter_extract_pages(&it, &p, 65536, 16, 0, &off);   // advances by n
//   ::iovec v[8];
//   unsigned nv = iov::iov_iter_to_iovecs(&it, v, 8, SIZE_MAX);           // does not advance
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>

#include "iov/config.hpp"
#include "iov/folio_queue.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"
#include "iov/page.hpp"
#include "iov/position.hpp"
#include "iov/rcu.hpp"
#include "iov/vmalloc.hpp"
#include "iov/xarray.hpp"

namespace iov {

// uio.h's flags for iov_iter_extract_pages() and extract_iter_to_sg(). The
// kernel's is a __bitwise unsigned int, which only sparse tells from one.
using iov_iter_extraction_t = unsigned int;
// The caller can take peer-to-peer DMA pages: there are none in user space,
// so it changes nothing here.
inline constexpr iov_iter_extraction_t ITER_ALLOW_P2PDMA = 0x01;
// uio.h's on-stack iovec count before import_iovec() allocates (also a macro
// of <linux/uio.h>, which then stands for it).
#ifndef UIO_FASTIOV
inline constexpr unsigned UIO_FASTIOV = 8;
#endif

namespace internal {
// The kernel's want_pages_array(): how many entries to fill, allocating the
// array when the caller passed none.
inline unsigned want_pages_array(page*** res, size_t size, size_t start, unsigned maxpages) {
  size_t count = div_round_up(size + start, PAGE_SIZE);
  if (count > maxpages)
    count = maxpages;
  if (!*res && count) {
    *res = static_cast<page**>(std::malloc(count * sizeof(page*)));
    if (!*res)
      return 0;
  }
  return static_cast<unsigned>(count);
}

// The page of a kernel address, as the kernel's kvec extraction finds it:
// through the vmalloc range's table for a vmap()/vmalloc() address, whose
// pages are not its frames, else its own frame.
inline page* kvec_addr_to_page(const void* kaddr) {
  if (IOV_UNLIKELY(is_vmalloc_or_module_addr(kaddr)))
    return vmalloc_to_page(kaddr);
  return virt_to_page(kaddr);
}

// The pages under n pages of a vmalloc range from kaddr, page-aligned. Out
// of line and cold, so that the common path stays as small as before.
IOV_NOINLINE __attribute__((cold)) inline void vmalloc_pages_of(const char* kaddr, page** pages, unsigned n) {
  for (unsigned k = 0; k < n; k++)
    pages[k] = vmalloc_to_page(kaddr + k * PAGE_SIZE);
}

// The tail UBUF, IOVEC and KVEC share: the pages under the `size` bytes of
// contiguous memory at addr (at most maxpages of them), and the advance past
// the bytes those pages hold. A vmalloc address (KVEC only) names its pages
// one by one (VmallocAware: see extract_pages below).
template <bool VmallocAware = true>
inline ssize_t extract_contiguous_pages(iov_iter* i, const char* addr, size_t size, page*** pages, unsigned maxpages,
                                 size_t* offset0) {
  size_t offset = offset_in_page(addr);
  *offset0 = offset;
  maxpages = want_pages_array(pages, size, offset, maxpages);
  if (!maxpages)
    return -ENOMEM;
  if (VmallocAware && IOV_UNLIKELY(is_vmalloc_or_module_addr(addr))) {
    vmalloc_pages_of(addr - offset, *pages, maxpages);
  } else {
    page* first = virt_to_page(addr);
    for (unsigned k = 0; k < maxpages; k++)
      (*pages)[k] = first + k;
  }
  size = std::min(size, maxpages * PAGE_SIZE - offset);
  iov_iter_advance(i, size);
  return static_cast<ssize_t>(size);
}

// UBUF and IOVEC: the first non-empty segment, as pages of contiguous memory.
// A vmap()ped buffer handed over as user memory gives its pages too, what
// the kernel's page-table walk would find under a user mapping of them.
template <bool VmallocAware = true>
inline ssize_t extract_user_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  const char* addr;
  if (iter_is_ubuf(i)) {
    addr = static_cast<const char*>(i->ubuf) + i->iov_offset;
  } else {
    addr = nullptr;
    size_t skip = i->iov_offset;
    for (unsigned long k = 0; k < i->nr_segs; k++, skip = 0) {
      size_t len = i->iov[k].iov_len - skip;
      if (!len)
        continue;
      maxsize = std::min(maxsize, len);
      addr = static_cast<const char*>(i->iov[k].iov_base) + skip;
      break;
    }
    if (!addr)
      return 0;
  }
  return extract_contiguous_pages<VmallocAware>(i, addr, maxsize, pages, maxpages, offset0);
}

template <bool VmallocAware = true>
inline ssize_t extract_kvec_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  size_t skip = i->iov_offset, size;
  for (;;) {
    if (i->nr_segs == 0)
      return 0;
    size = std::min(maxsize, i->kvec->iov_len - skip);
    if (size)
      break;
    i->iov_offset = 0;
    i->nr_segs--;
    i->kvec++;
    skip = 0;
  }
  const char* kaddr = static_cast<const char*>(i->kvec->iov_base) + skip;
  return extract_contiguous_pages<VmallocAware>(i, kaddr, size, pages, maxpages, offset0);
}

// BVEC: runs of whole pages across bvecs; stops where the next page would not
// start at offset 0, or this one does not end at PAGE_SIZE (a hole).
inline ssize_t extract_bvec_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  // Step over a finished or empty bvec (the kernel steps over one finished
  // bvec only, and returns 0 at an empty one: a caller looping on the count
  // would spin).
  while (i->nr_segs && i->iov_offset >= i->bvec->bv_len) {
    i->iov_offset = 0;
    i->nr_segs--;
    i->bvec++;
  }
  if (i->nr_segs == 0)
    return 0;
  size_t skip = i->iov_offset;
  maxpages = want_pages_array(pages, maxsize, skip, maxpages);
  if (!maxpages)
    return -ENOMEM;
  size_t size = 0, left = maxsize, done = skip;
  unsigned long idx = 0;
  unsigned k = 0;
  while (left && idx < i->nr_segs) {
    const bio_vec& seg = i->bvec[idx];
    size_t off = seg.bv_offset + done;
    page* pg = seg.bv_page + off / PAGE_SIZE;
    size_t pg_off = off % PAGE_SIZE;
    size_t len = std::min({left, size_t{seg.bv_len} - done, PAGE_SIZE - pg_off});
    if (k) {
      if (pg_off)
        break;
    } else {
      *offset0 = pg_off;
    }
    (*pages)[k++] = pg;
    size += len;
    if (k >= maxpages || pg_off + len != PAGE_SIZE)
      break;
    left -= len;
    done += len;
    if (done >= seg.bv_len) {
      done = 0;
      idx++;
    }
  }
  iov_iter_advance(i, size);
  return static_cast<ssize_t>(size);
}

// BVECQ: the posting's iter_count_bvecq_pages(): how many pages the next run
// of virtually contiguous ones spans (a bvec not starting at a page boundary,
// or an earlier one not ending at one, ends the run; slots without a page are
// passed over), at most maxpages.
inline unsigned count_bvecq_pages(const iov_iter* i, size_t maxsize, unsigned maxpages) {
  const bvecq* bq = i->bvecq;
  unsigned slot = i->bvecq_slot;
  size_t remain = std::min(maxsize, i->count), count = 0, offset = i->iov_offset;
  do {
    if (slot >= bq->nr_slots) {
      if (!bq->next)
        break;  // the kernel's WARN_ON_ONCE(remain > 0)
      bq = bq->next;
      slot = 0;
      offset = 0;
      continue;
    }
    const bio_vec& bv = bq->bv[slot++];
    size_t boff = bv.bv_offset, blen = bv.bv_len;
    if (IOV_UNLIKELY(!bv.bv_page)) {
      if (blen && count > 0)
        break;
      continue;
    }
    if (offset_in_page(boff) && count > 0)
      break;
    boff += offset;
    blen -= offset;
    offset = 0;
    if (!blen)
      continue;
    blen = std::min(blen, remain);
    remain -= blen;
    blen += offset_in_page(boff);
    count += div_round_up(blen, PAGE_SIZE);
    if (offset_in_page(blen))
      break;
  } while (remain > 0 && count < maxpages);
  return static_cast<unsigned>(std::min<size_t>(count, maxpages));
}

// BVECQ: the posting's iov_iter_extract_bvecq_pages(): the pages of the run
// count_bvecq_pages() measured, one entry a page.
inline ssize_t extract_bvecq_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  maxpages = count_bvecq_pages(i, maxsize, maxpages);
  if (!*pages) {
    *pages = static_cast<page**>(std::malloc(std::max(maxpages, 1u) * sizeof(page*)));
    if (!*pages)
      return -ENOMEM;
  }
  page** p = *pages;
  const bvecq* bq = i->bvecq;
  size_t offset = i->iov_offset, extracted = 0;
  unsigned slot = i->bvecq_slot, nr = 0;
  do {
    if (slot >= bq->nr_slots) {
      if (!bq->next)
        break;  // the kernel's WARN_ON_ONCE(extracted < count)
      bq = bq->next;
      slot = 0;
      offset = 0;
      continue;
    }
    const bio_vec& bv = bq->bv[slot];
    size_t boff = bv.bv_offset, blen = bv.bv_page ? bv.bv_len : 0;
    if (offset < blen) {
      size_t part = std::min(maxsize - extracted, blen - offset);
      size_t poff = (boff + offset) % PAGE_SIZE, pix = (boff + offset) / PAGE_SIZE;
      if (poff + part > PAGE_SIZE)
        part = PAGE_SIZE - poff;
      if (!extracted)
        *offset0 = poff;
      p[nr++] = bv.bv_page + pix;
      offset += part;
      extracted += part;
    }
    if (offset >= blen) {
      offset = 0;
      slot++;
    }
  } while (nr < maxpages && extracted < maxsize);
  i->bvecq = bq;
  i->bvecq_slot = static_cast<uint16_t>(slot);
  i->iov_offset = offset;
  i->count -= extracted;
  return static_cast<ssize_t>(extracted);
}

// FOLIOQ: the kernel's iov_iter_extract_folioq_pages(): page by page through
// the folios (every page of a folio but its last is full, so any run is
// virtually contiguous), from a slot past a segment's end into the next.
inline ssize_t extract_folioq_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages,
                                    size_t* offset0) {
  const folio_queue* folioq = i->folioq;
  unsigned slot = i->folioq_slot, nr = 0;
  size_t extracted = 0;
  if (slot >= folioq_nr_slots(folioq)) {
    if (!folioq->next || IOV_BUG_ON(i->iov_offset != 0, "iov_iter_extract_pages: offset past a folio queue segment"))
      return -EIO;  // the kernel's WARN_ON; with no next segment, the kernel's NULL
    folioq = folioq->next;
    slot = 0;
  }
  size_t offset = i->iov_offset & ~PAGE_MASK;
  *offset0 = offset;
  maxpages = want_pages_array(pages, maxsize, offset, maxpages);
  if (!maxpages)
    return -ENOMEM;
  page** p = *pages;
  for (;;) {
    folio* f = folioq_folio(folioq, slot);
    size_t off = i->iov_offset, fsize = folioq_folio_size(folioq, slot);
    size_t part = PAGE_SIZE - off % PAGE_SIZE;
    if (off < fsize) {
      part = std::min({part, maxsize - extracted, fsize - off});
      i->count -= part;
      i->iov_offset += part;
      extracted += part;
      p[nr++] = folio_page(f, off / PAGE_SIZE);
    }
    if (nr >= maxpages || extracted >= maxsize)
      break;
    if (i->iov_offset >= fsize) {
      i->iov_offset = 0;
      slot++;
      if (slot == folioq_nr_slots(folioq) && folioq->next) {
        folioq = folioq->next;
        slot = 0;
      }
    }
  }
  i->folioq = folioq;
  i->folioq_slot = static_cast<uint8_t>(slot);
  return static_cast<ssize_t>(extracted);
}

// XARRAY: consecutive present indices; a missing index ends the run.
inline ssize_t extract_xarray_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  size_t pos = static_cast<size_t>(i->xarray_start) + i->iov_offset;
  size_t offset = pos & (PAGE_SIZE - 1);
  *offset0 = offset;
  maxpages = want_pages_array(pages, maxsize, offset, maxpages);
  if (!maxpages)
    return -ENOMEM;
  // One cursor for the run, as the kernel's iter_xarray_populate_pages():
  // a lookup from the root per page would cost more than the page's copy.
  page** out = *pages;  // held in a register: stores through it could alias *pages
  unsigned nr = 0;
  {
    rcu_read_guard rcu;
    XA_STATE(xas, i->xarray, pos >> PAGE_SHIFT);
    for (void* e = xas_load(&xas); e; e = xas_next(&xas)) {
      out[nr++] = static_cast<page*>(e);
      if (nr == maxpages)
        break;
    }
  }
  size_t size = nr ? std::min(nr * PAGE_SIZE - offset, maxsize) : 0;
  iov_iter_advance(i, size);
  return static_cast<ssize_t>(size);
}
}  // namespace internal

// *pages points to the caller's array of maxpages entries (or is nullptr: then
// an array is malloc()ed, to be freed with free(), as the kernel kvmallocs one).
// Nothing is pinned in user space; extraction_flags are accepted and ignored
// (ITER_ALLOW_P2PDMA is the only one the kernel has).
// Returns the bytes covered, *offset0 the offset into the first page, and
// advances; -EFAULT for DISCARD, -ENOMEM if an array cannot be allocated.
namespace internal {
// VmallocAware = false: the extraction without the vmalloc test, which only
// bench/vmap_bench.cc calls, to measure what the test costs.
template <bool VmallocAware = true>
inline ssize_t extract_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  maxsize = std::min({maxsize, i->count, MAX_RW_COUNT});
  if (!maxsize || !maxpages)
    return 0;
  switch (i->type) {
    case ITER_UBUF:
    case ITER_IOVEC:
      return internal::extract_user_pages<VmallocAware>(i, pages, maxsize, maxpages, offset0);
    case ITER_KVEC:
      return internal::extract_kvec_pages<VmallocAware>(i, pages, maxsize, maxpages, offset0);
    case ITER_BVEC:
      return internal::extract_bvec_pages(i, pages, maxsize, maxpages, offset0);
    case ITER_BVECQ:
      return internal::extract_bvecq_pages(i, pages, maxsize, maxpages, offset0);
    case ITER_FOLIOQ:
      return internal::extract_folioq_pages(i, pages, maxsize, maxpages, offset0);
    case ITER_XARRAY:
      return internal::extract_xarray_pages(i, pages, maxsize, maxpages, offset0);
    default:
      return -EFAULT;
  }
}
}  // namespace internal

inline ssize_t iov_iter_extract_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages,
                               iov_iter_extraction_t /*extraction_flags*/, size_t* offset0) {
  return internal::extract_pages(i, pages, maxsize, maxpages, offset0);
}

// The next pieces of *i as iovecs, for sendmsg()/writev()/io_uring: fills at
// most maxvecs entries covering at most maxsize bytes and returns how many
// (*bytes, when given, gets the bytes they cover). Pieces are the walk's (see
// iterate.hpp), with empty ones left out and neighbours that touch in memory
// merged, so a multi-page bvec of contiguous frames is one iovec. Does not
// advance: advance by what the system call took. DISCARD has no memory (0).
// The addresses of an XARRAY's pages stay valid only as long as the pages do.
inline unsigned iov_iter_to_iovecs(const iov_iter* i, ::iovec* vecs, unsigned maxvecs, size_t maxsize,
                                  size_t* bytes = nullptr) {
  struct out_vecs {
    ::iovec* vecs;
    unsigned max, nr;
  } out{vecs, maxvecs, 0};
  size_t covered = 0;
  if (maxvecs && !iov_iter_is_discard(i)) {
    // Walk a copy; a piece that finds no free entry is left unprocessed, which ends the walk.
    auto step = [](void* base, size_t, size_t len, void* priv, void*) -> size_t {
      auto* o = static_cast<out_vecs*>(priv);
      if (!len)
        return 0;
      if (o->nr && static_cast<char*>(o->vecs[o->nr - 1].iov_base) + o->vecs[o->nr - 1].iov_len == base) {
        o->vecs[o->nr - 1].iov_len += len;
        return 0;
      }
      if (o->nr == o->max)
        return len;
      o->vecs[o->nr++] = {base, len};
      return 0;
    };
    iov_iter scratch = *i;
    covered = iterate_and_advance2(&scratch, maxsize, &out, nullptr, step, step);
  }
  if (bytes)
    *bytes = covered;
  return out.nr;
}

// --- iov_iter_get_pages2() and friends (uio.h, lib/iov_iter.c) ---------------------

// iov_iter_extract_pages() pins nothing and takes no reference, so a caller
// that asks whether it must unpin what it got is told no. (The kernel answers
// user_backed_iter(): it pins user pages, and takes nothing on kernel-backed
// ones, as here. A port's unpin branch is then never taken.)
inline bool iov_iter_extract_will_pin(const iov_iter*) { return false; }

namespace internal {
// The kernel's first_bvec_segment() and the BVEC case of
// __iov_iter_get_pages_alloc(): the pages of the rest of the current bvec
// only (never into the next), then the iterator steps past them.
inline ssize_t get_bvec_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* start) {
  size_t skip = i->iov_offset, len = i->bvec->bv_len - skip;
  if (maxsize > len)
    maxsize = len;
  skip += i->bvec->bv_offset;
  page* first = i->bvec->bv_page + skip / PAGE_SIZE;
  *start = skip % PAGE_SIZE;
  unsigned n = want_pages_array(pages, maxsize, *start, maxpages);
  if (!n)
    return -ENOMEM;
  for (unsigned k = 0; k < n; k++)
    (*pages)[k] = first + k;
  maxsize = std::min(maxsize, n * PAGE_SIZE - *start);
  i->count -= maxsize;
  i->iov_offset += maxsize;
  if (i->iov_offset == i->bvec->bv_len) {
    i->iov_offset = 0;
    i->bvec++;
    i->nr_segs--;
  }
  return static_cast<ssize_t>(maxsize);
}

// Which pages __iov_iter_get_pages_alloc() returns. User-backed: the pages of
// the first non-empty segment; BVEC: of the current bvec; FOLIOQ: page by page
// through the folios (the kernel's iter_folioq_get_pages() ends where its
// extraction does); XARRAY: consecutive present pages; KVEC, DISCARD and
// BVECQ: -EFAULT (the kernel's too; BVECQ as posted, docs/iterators.md).
inline ssize_t find_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* start) {
  switch (i->type) {
    case ITER_UBUF:
    case ITER_IOVEC:
      return extract_user_pages(i, pages, maxsize, maxpages, start);
    case ITER_BVEC:
      return get_bvec_pages(i, pages, maxsize, maxpages, start);
    case ITER_FOLIOQ:
      return extract_folioq_pages(i, pages, maxsize, maxpages, start);
    case ITER_XARRAY:
      return extract_xarray_pages(i, pages, maxsize, maxpages, start);
    default:
      return -EFAULT;
  }
}

// The kernel's __iov_iter_get_pages_alloc(): the pages, each with a reference
// the caller drops with put_page() (the kernel's get_user_pages_fast() takes
// one on a user page, folio_get()/get_page() on a kernel one). The entries
// that hold the returned bytes are the first DIV_ROUND_UP(start + bytes,
// PAGE_SIZE), and only they are referenced: a kernel caller puts that many.
// A page that appears twice gets two references. Memory not from the page
// allocator has no count (get_page() leaves it alone, as the kernel's leaves
// slab memory); a later frame of an allocation without __GFP_COMP has none
// either, and referencing it is the kernel's BUG (get_page()'s abort).
inline ssize_t get_pages_alloc(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* start) {
  maxsize = std::min({maxsize, i->count, MAX_RW_COUNT});
  if (!maxsize)
    return 0;
  ssize_t res = find_pages(i, pages, maxsize, maxpages, start);
  if (res > 0) {
    size_t n = div_round_up(static_cast<size_t>(res) + *start, PAGE_SIZE);
    for (size_t k = 0; k < n; k++)
      get_page((*pages)[k]);
  }
  return res;
}
}  // namespace internal

// The pages under the next bytes of *i, at most maxpages into pages[], with
// *start the offset into the first; returns the bytes they cover (0, -EFAULT,
// -ENOMEM) and advances by them. Each of the DIV_ROUND_UP(*start + bytes,
// PAGE_SIZE) pages returned holds a reference for the caller, who put_page()s
// each, as in the kernel. A null pages is the kernel's BUG_ON: 0, or an abort
// with IOV_CHECKS on.
inline ssize_t iov_iter_get_pages2(iov_iter* i, page** pages, size_t maxsize, unsigned maxpages, size_t* start) {
  if (!maxpages)
    return 0;
  if (IOV_BUG_ON(!pages, "iov_iter_get_pages2: pages is NULL"))
    return 0;
  return internal::get_pages_alloc(i, &pages, maxsize, maxpages, start);
}

// As iov_iter_get_pages2(), into an array it malloc()s (*pages; put_page() each
// page, then free() it, as the kernel's caller kvfree()s it); *pages is nullptr
// when nothing was got.
inline ssize_t iov_iter_get_pages_alloc2(iov_iter* i, page*** pages, size_t maxsize, size_t* start) {
  *pages = nullptr;
  ssize_t len = internal::get_pages_alloc(i, pages, maxsize, ~0U, start);
  if (len <= 0) {
    std::free(*pages);
    *pages = nullptr;
  }
  return len;
}

}  // namespace iov
