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

// Appends up to sg_max entries at sgtable->sgl + sgtable->nents for up to
// maxsize bytes of the iterator, one entry a page piece, and advances the
// iterator: the bytes, 0 when maxsize or sg_max is 0, or the extraction's
// error (-EFAULT for DISCARD), with the table backed off to orig_nents as the
// kernel's. Nothing is pinned (see iov_iter_extract_pages()). The kernel
// makes one entry of a multi-page bio_vec or folio piece; iov makes one per
// page, the same list where pieces are a page or less.
inline ssize_t extract_iter_to_sg(iov_iter* iter, size_t maxsize, sg_table* sgtable, unsigned int sg_max,
                                  iov_iter_extraction_t extraction_flags) {
  if (maxsize == 0)
    return 0;
  scatterlist* sg = sgtable->sgl + sgtable->nents;
  ssize_t ret = 0, res = 0;
  page* local[64];
  do {
    page** pages = local;
    size_t off = 0;
    res = iov_iter_extract_pages(iter, &pages, maxsize, std::min(sg_max, 64u), extraction_flags, &off);
    if (res <= 0)
      break;
    maxsize -= res;
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

}  // namespace iov
