// bvec.hpp: the bio_vec, a piece of memory named by its page (the kernel's
// include/linux/bvec.h).
//
// A bio_vec names a page, an offset into it and a length, and may run across
// several frames when they come from one alloc_pages() or from virt_to_page()
// of one contiguous buffer.
//
//   iov::bio_vec bv;
//   iov::bvec_set_page(&bv, iov::alloc_page(), 4096, 0);
#pragma once

#include <climits>
#include <cstddef>

#include "iov/config.hpp"
#include "iov/folio.hpp"
#include "iov/page.hpp"

namespace iov {

struct bio_vec {
  page* bv_page;
  unsigned bv_len;
  unsigned bv_offset;
};

inline void bvec_set_page(bio_vec* bv, page* p, unsigned len, unsigned offset) {
  bv->bv_page = p;
  bv->bv_len = len;
  bv->bv_offset = offset;
}

// bvec_set_folio: a bio_vec over `len` bytes of the folio from `offset`,
// named by the page that holds that offset. A len above UINT_MAX is the
// kernel's WARN: the bio_vec is left unset.
inline void bvec_set_folio(bio_vec* bv, folio* f, size_t len, size_t offset) {
  if (IOV_UNLIKELY(len > UINT_MAX))
    return;
  bvec_set_page(bv, folio_page(f, offset / PAGE_SIZE), static_cast<unsigned>(len),
                static_cast<unsigned>(offset % PAGE_SIZE));
}

// bvec_set_virt: a bio_vec over `len` bytes of contiguous memory at `vaddr`.
inline void bvec_set_virt(bio_vec* bv, void* vaddr, unsigned len) {
  bvec_set_page(bv, virt_to_page(vaddr), len, static_cast<unsigned>(offset_in_page(vaddr)));
}

}  // namespace iov
