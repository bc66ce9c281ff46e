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

#include <cstddef>

#include "iov/config.hpp"
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

// bvec_set_virt: a bio_vec over `len` bytes of contiguous memory at `vaddr`.
inline void bvec_set_virt(bio_vec* bv, void* vaddr, unsigned len) {
  bvec_set_page(bv, virt_to_page(vaddr), len, static_cast<unsigned>(offset_in_page(vaddr)));
}

}  // namespace iov
