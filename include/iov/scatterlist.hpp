// scatterlist.hpp: the kernel's scatterlist (include/linux/scatterlist.h,
// lib/scatterlist.c) and extract_iter_to_sg(), which fills one from an
// iterator, as crypto, RDMA, NVMe-oF and cifs do.
//
//   iov::scatterlist sg[16];
//   iov::sg_table t = {sg, 0, 0};
//   iov::sg_init_table(sg, 16);
//   ssize_t n = iov::extract_iter_to_sg(&it, len, &t, 16, 0);  // appends, advances
//   iov::sg_mark_end(&sg[t.nents - 1]);
//
// page_link holds the page and, in its two low bits, the chain and end marks
// (pages are 4 KiB-aligned). There is no DMA: the dma_ fields are carried for
// the layout's sake and never set.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "iov/extract.hpp"
#include "iov/folio.hpp"
#include "iov/folio_queue.hpp"
#include "iov/bvecq.hpp"
#include "iov/xarray.hpp"
#include "iov/rcu.hpp"
#include "iov/highmem.hpp"
#include "iov/iov_iter.hpp"
#include "iov/page.hpp"

namespace iov {

using dma_addr_t = uint64_t;

struct scatterlist {
  unsigned long page_link;
  unsigned int offset;
  unsigned int length;
  dma_addr_t dma_address;
  unsigned int dma_length;
  unsigned int dma_flags;
};

struct sg_table {
  scatterlist* sgl;     // the list
  unsigned int nents;   // entries in use
  unsigned int orig_nents;  // entries at the start (extract_iter_to_sg backs off to it on failure)
};

inline constexpr unsigned long SG_CHAIN = 0x01UL, SG_END = 0x02UL, SG_PAGE_LINK_MASK = SG_CHAIN | SG_END;

inline bool sg_is_chain(const scatterlist* sg) { return sg->page_link & SG_CHAIN; }
inline bool sg_is_last(const scatterlist* sg) { return sg->page_link & SG_END; }
inline scatterlist* sg_chain_ptr(const scatterlist* sg) {
  return reinterpret_cast<scatterlist*>(sg->page_link & ~SG_PAGE_LINK_MASK);
}
inline page* sg_page(const scatterlist* sg) { return reinterpret_cast<page*>(sg->page_link & ~SG_PAGE_LINK_MASK); }

// The page, keeping the entry's marks.
inline void sg_assign_page(scatterlist* sg, page* pg) {
  sg->page_link = (sg->page_link & (SG_CHAIN | SG_END)) | reinterpret_cast<unsigned long>(pg);
}
inline void sg_set_page(scatterlist* sg, page* pg, unsigned int len, unsigned int offset) {
  sg_assign_page(sg, pg);
  sg->offset = offset;
  sg->length = len;
}
inline void sg_set_buf(scatterlist* sg, const void* buf, unsigned int buflen) {
  sg_set_page(sg, virt_to_page(buf), buflen, static_cast<unsigned>(offset_in_page(buf)));
}
inline void_ptr sg_virt(const scatterlist* sg) { return page_address(sg_page(sg)) + sg->offset; }

inline void sg_mark_end(scatterlist* sg) {
  sg->page_link |= SG_END;
  sg->page_link &= ~SG_CHAIN;
}
inline void sg_unmark_end(scatterlist* sg) { sg->page_link &= ~SG_END; }

inline void sg_init_table(scatterlist* sgl, unsigned int nents) {
  std::memset(sgl, 0, sizeof(*sgl) * nents);
  if (nents)
    sg_mark_end(&sgl[nents - 1]);
}
inline void sg_init_one(scatterlist* sg, const void* buf, unsigned int buflen) {
  sg_init_table(sg, 1);
  sg_set_buf(sg, buf, buflen);
}

// The entry after sg, through a chain link; nullptr after the last.
inline scatterlist* sg_next(scatterlist* sg) {
  if (sg_is_last(sg))
    return nullptr;
  sg++;
  if (sg_is_chain(sg))
    sg = sg_chain_ptr(sg);
  return sg;
}

// Links prv's last entry (of prv_nents) to sgl: that entry holds no data.
inline void sg_chain(scatterlist* prv, unsigned int prv_nents, scatterlist* sgl) {
  scatterlist* link = &prv[prv_nents - 1];
  link->offset = 0;
  link->length = 0;
  link->page_link = (reinterpret_cast<unsigned long>(sgl) | SG_CHAIN) & ~SG_END;
}

// Entries up to and including the one marked last.
inline int sg_nents(scatterlist* sg) {
  int nents = 0;
  for (; sg; sg = sg_next(sg))
    nents++;
  return nents;
}

// One array of nents entries, the last marked (the kernel chains blocks of
// a page's worth; one allocation is the same list to its users). 0,
// -EINVAL for no entries, -ENOMEM.
inline int sg_alloc_table(sg_table* table, unsigned int nents, gfp_t /*gfp*/) {
  std::memset(table, 0, sizeof(*table));
  if (nents == 0)
    return -EINVAL;
  auto* sgl = static_cast<scatterlist*>(std::calloc(nents, sizeof(scatterlist)));
  if (!sgl)
    return -ENOMEM;
  sg_init_table(sgl, nents);
  table->sgl = sgl;
  table->nents = table->orig_nents = nents;
  return 0;
}
inline void sg_free_table(sg_table* table) {
  std::free(table->sgl);
  table->sgl = nullptr;
  table->nents = table->orig_nents = 0;
}

namespace internal {
// Copies between buf and the list's memory, entry by entry, up to buflen.
inline size_t sg_copy_buffer(scatterlist* sgl, unsigned int nents, void* buf, size_t buflen, bool to_buffer) {
  size_t done = 0;
  auto* b = static_cast<unsigned char*>(buf);
  scatterlist* sg = sgl;
  for (unsigned k = 0; sg && k < nents && done < buflen; k++, sg = sg_next(sg)) {
    size_t n = std::min<size_t>(sg->length, buflen - done);
    unsigned char* mem = sg_virt(sg);
    if (to_buffer)
      std::memcpy(b + done, mem, n);
    else
      std::memcpy(mem, b + done, n);
    done += n;
  }
  return done;
}
}  // namespace internal

inline size_t sg_copy_from_buffer(scatterlist* sgl, unsigned int nents, const void* buf, size_t buflen) {
  return internal::sg_copy_buffer(sgl, nents, const_cast<void*>(buf), buflen, false);
}
inline size_t sg_copy_to_buffer(scatterlist* sgl, unsigned int nents, void* buf, size_t buflen) {
  return internal::sg_copy_buffer(sgl, nents, buf, buflen, true);
}

// for_each_sg(sglist, sg, nr, i): sg takes each of the first nr entries.
#define for_each_sg(sglist, sg, nr, __i) \
  for ((__i) = 0, (sg) = (sglist); (__i) < (nr); (__i)++, (sg) = ::iov::sg_next(sg))

namespace internal {
// The kernel's extract_*_to_sg(), one a type. Each appends at
// sgtable->sgl + sgtable->nents, at most sg_max (> 0) entries for at most
// maxsize (<= the count) bytes, and advances the iterator by what it returns.

// UBUF, IOVEC: through iov_iter_extract_pages(), one entry a page, as the
// kernel's extract_user_to_sg(); on an error the entries added are taken
// back (and unpinned, which here does nothing).
inline ssize_t extract_user_to_sg(iov_iter* iter, size_t maxsize, sg_table* sgtable, unsigned sg_max,
                                  iov_iter_extraction_t extraction_flags) {
  scatterlist* sg = sgtable->sgl + sgtable->nents;
  ssize_t ret = 0, res = 0;
  page* local[64];
  do {
    page** pages = local;
    size_t off = 0;
    res = iov_iter_extract_pages(iter, &pages, maxsize, std::min(sg_max, 64u), extraction_flags, &off);
    if (res <= 0)
      break;
    maxsize -= static_cast<size_t>(res);
    ret += res;
    size_t left = static_cast<size_t>(res);
    for (unsigned k = 0; left; k++) {
      size_t len = std::min(left, PAGE_SIZE - off);
      sg_set_page(sg, pages[k], static_cast<unsigned>(len), static_cast<unsigned>(off));
      sgtable->nents++;
      sg++;
      sg_max--;
      left -= len;
      off = 0;
    }
  } while (maxsize > 0 && sg_max > 0);
  if (res < 0) {
    while (sgtable->nents > sgtable->orig_nents)
      unpin_user_page(sg_page(&sgtable->sgl[--sgtable->nents]));
    return res;
  }
  return ret;
}

// BVEC: one entry a bio_vec piece, however many pages it spans (the offset
// may then exceed PAGE_SIZE, as the kernel's may).
inline ssize_t extract_bvec_to_sg(iov_iter* iter, size_t maxsize, sg_table* sgtable, unsigned sg_max) {
  const bio_vec* bv = iter->bvec;
  scatterlist* sg = sgtable->sgl + sgtable->nents;
  size_t start = iter->iov_offset, ret = 0;
  for (unsigned long i = 0; i < iter->nr_segs; i++) {
    size_t len = bv[i].bv_len;
    if (start >= len) {
      start -= len;
      continue;
    }
    len = std::min(maxsize, len - start);
    sg_set_page(sg, bv[i].bv_page, static_cast<unsigned>(len), static_cast<unsigned>(bv[i].bv_offset + start));
    sgtable->nents++;
    sg++;
    sg_max--;
    ret += len;
    maxsize -= len;
    if (maxsize == 0 || sg_max == 0)
      break;
    start = 0;
  }
  if (ret)
    iov_iter_advance(iter, ret);
  return static_cast<ssize_t>(ret);
}

// KVEC: one entry a page of each kvec piece, the page the address's (its
// frame, or for a vmalloc address the page mapped there).
inline ssize_t extract_kvec_to_sg(iov_iter* iter, size_t maxsize, sg_table* sgtable, unsigned sg_max) {
  const kvec* kv = iter->kvec;
  scatterlist* sg = sgtable->sgl + sgtable->nents;
  size_t start = iter->iov_offset, ret = 0;
  for (unsigned long i = 0; i < iter->nr_segs; i++) {
    size_t len = kv[i].iov_len;
    if (start >= len) {
      start -= len;
      continue;
    }
    auto kaddr = reinterpret_cast<uintptr_t>(kv[i].iov_base) + start;
    size_t off = kaddr & ~PAGE_MASK;
    len = std::min(maxsize, len - start);
    kaddr &= PAGE_MASK;
    do {
      size_t seg = std::min(len, PAGE_SIZE - off);
      sg_set_page(sg, kvec_addr_to_page(reinterpret_cast<const void*>(kaddr)), static_cast<unsigned>(seg),
                  static_cast<unsigned>(off));
      sgtable->nents++;
      sg++;
      sg_max--;
      len -= seg;
      maxsize -= seg;
      ret += seg;
      kaddr += PAGE_SIZE;
      off = 0;
    } while (len > 0 && sg_max > 0);
    if (maxsize == 0 || sg_max == 0)
      break;
    start = 0;
  }
  if (ret)
    iov_iter_advance(iter, ret);
  return static_cast<ssize_t>(ret);
}

// BVECQ: one entry a slot piece, as the posting's extract_bvecq_to_sg().
// A slot with a length must name a page (a programming error under the
// checks; unchecked, the extraction ends before it, as the walks do).
inline ssize_t extract_bvecq_to_sg(iov_iter* iter, size_t maxsize, sg_table* sgtable, unsigned sg_max) {
  const bvecq* bq = iter->bvecq;
  scatterlist* sg = sgtable->sgl + sgtable->nents;
  unsigned slot = iter->bvecq_slot;
  size_t offset = iter->iov_offset, ret = 0;
  while (sg_max > 0 && ret < maxsize) {
    if (slot >= bq->nr_slots) {
      if (!bq->next)
        break;  // the kernel's WARN_ON_ONCE(ret < count): the count ran past the chain
      bq = bq->next;
      slot = 0;
      offset = 0;
      continue;
    }
    const bio_vec& bv = bq->bv[slot];
    size_t blen = bv.bv_len;
    if (offset >= blen) {
      offset = 0;
      slot++;
      continue;
    }
    if (IOV_BUG_ON(!bv.bv_page, "extract_iter_to_sg: a bvecq slot with a length and no page"))
      break;
    size_t part = std::min(maxsize - ret, blen - offset);
    sg_set_page(sg, bv.bv_page, static_cast<unsigned>(part), static_cast<unsigned>(bv.bv_offset + offset));
    sgtable->nents++;
    sg++;
    sg_max--;
    offset += part;
    ret += part;
  }
  iter->bvecq = bq;
  iter->bvecq_slot = static_cast<uint16_t>(slot);
  iter->iov_offset = offset;
  iter->count -= ret;
  return static_cast<ssize_t>(ret);
}

// FOLIOQ: one entry a folio piece, the folio's head page with the offset
// into the folio, as the kernel's extract_folioq_to_sg().
inline ssize_t extract_folioq_to_sg(iov_iter* iter, size_t maxsize, sg_table* sgtable, unsigned sg_max) {
  const folio_queue* folioq = iter->folioq;
  scatterlist* sg = sgtable->sgl + sgtable->nents;
  unsigned slot = iter->folioq_slot;
  size_t offset = iter->iov_offset, ret = 0;
  if (slot >= folioq_nr_slots(folioq)) {
    folioq = folioq->next;
    if (!folioq)
      return 0;  // the kernel's WARN_ON_ONCE
    slot = 0;
  }
  do {
    folio* f = folioq_folio(folioq, slot);
    size_t fsize = folioq_folio_size(folioq, slot);
    if (offset < fsize) {
      size_t part = std::min(maxsize - ret, fsize - offset);
      sg_set_page(sg, folio_page(f, 0), static_cast<unsigned>(part), static_cast<unsigned>(offset));
      sgtable->nents++;
      sg++;
      sg_max--;
      offset += part;
      ret += part;
    }
    if (offset >= fsize) {
      offset = 0;
      slot++;
      if (slot >= folioq_nr_slots(folioq)) {
        if (!folioq->next)
          break;  // the kernel's WARN_ON_ONCE(ret < count)
        folioq = folioq->next;
        slot = 0;
      }
    }
  } while (sg_max > 0 && ret < maxsize);
  iter->folioq = folioq;
  iter->folioq_slot = static_cast<uint8_t>(slot);
  iter->iov_offset = offset;
  iter->count -= ret;
  return static_cast<ssize_t>(ret);
}

// XARRAY: one entry an index. iov's XARRAY holds a page an index (see
// iterate_xarray()), which the kernel's one entry a folio is for order-0
// folios; a missing index ends the extraction.
inline ssize_t extract_xarray_to_sg(iov_iter* iter, size_t maxsize, sg_table* sgtable, unsigned sg_max) {
  scatterlist* sg = sgtable->sgl + sgtable->nents;
  size_t start = static_cast<size_t>(iter->xarray_start) + iter->iov_offset, ret = 0;
  size_t offset = start & ~PAGE_MASK;
  {
    rcu_read_guard rcu;
    XA_STATE(xas, iter->xarray, start >> PAGE_SHIFT);
    for (void* e = xas_load(&xas); e; e = xas_next(&xas)) {
      size_t len = std::min(maxsize, PAGE_SIZE - offset);
      sg_set_page(sg, static_cast<page*>(e), static_cast<unsigned>(len), static_cast<unsigned>(offset));
      sgtable->nents++;
      sg++;
      sg_max--;
      maxsize -= len;
      ret += len;
      if (maxsize == 0 || sg_max == 0)
        break;
      offset = 0;
    }
  }
  if (ret)
    iov_iter_advance(iter, ret);
  return static_cast<ssize_t>(ret);
}
}  // namespace internal

// Appends up to sg_max entries at sgtable->sgl + sgtable->nents for up to
// maxsize bytes of the iterator and advances it, as the kernel's: one entry
// a page for UBUF, IOVEC and KVEC, a bio_vec or slot piece for BVEC and
// BVECQ (a multi-page one is one entry), a folio piece for FOLIOQ, a page for
// XARRAY. No end mark is placed. Returns the bytes; 0 when maxsize or sg_max
// is 0 (the kunit case's expectation; nothing written), -EIO for DISCARD (the
// kernel's), or a UBUF/IOVEC extraction's error with the table backed off to
// orig_nents. Nothing is pinned (see iov_iter_extract_pages()).
inline ssize_t extract_iter_to_sg(iov_iter* iter, size_t maxsize, sg_table* sgtable, unsigned int sg_max,
                                  iov_iter_extraction_t extraction_flags) {
  if (maxsize == 0)
    return 0;
  if (iov_iter_type(iter) >= ITER_DISCARD)
    return -EIO;  // DISCARD has no memory to list
  maxsize = std::min(maxsize, iov_iter_count(iter));
  if (maxsize == 0 || sg_max == 0)
    return 0;
  switch (iov_iter_type(iter)) {
    case ITER_UBUF:
    case ITER_IOVEC:
      return internal::extract_user_to_sg(iter, maxsize, sgtable, sg_max, extraction_flags);
    case ITER_BVEC:
      return internal::extract_bvec_to_sg(iter, maxsize, sgtable, sg_max);
    case ITER_KVEC:
      return internal::extract_kvec_to_sg(iter, maxsize, sgtable, sg_max);
    case ITER_BVECQ:
      return internal::extract_bvecq_to_sg(iter, maxsize, sgtable, sg_max);
    case ITER_FOLIOQ:
      return internal::extract_folioq_to_sg(iter, maxsize, sgtable, sg_max);
    case ITER_XARRAY:
      return internal::extract_xarray_to_sg(iter, maxsize, sgtable, sg_max);
    default:
      return -EIO;
  }
}

}  // namespace iov
