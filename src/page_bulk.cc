// page_bulk.cc: the page allocator's batch calls (the kernel's
// alloc_pages_bulk() and release_pages()), over alloc_page()/put_page().
#include "iov/page.hpp"

namespace iov {

unsigned long alloc_pages_bulk(gfp_t gfp, unsigned long nr_pages, page** page_array) noexcept {
  unsigned long filled = 0;
  for (unsigned long k = 0; k < nr_pages; k++, filled++) {
    if (page_array[k])
      continue;
    page_array[k] = alloc_page(gfp);
    if (!page_array[k])
      break;  // as the kernel's: what is filled so far
  }
  return filled;
}

void release_pages(page** pages, int nr) noexcept {
  for (int k = 0; k < nr; k++)
    if (pages[k])
      put_page(pages[k]);
}

}  // namespace iov
