// kunit_layouts.hpp: the buffers, segment layouts, reference patterns and
// checks of the kernel's iov_iter kunit tests (lib/kunit_iov_iter.c, now
// lib/tests/kunit_iov_iter.c, and the helpers of David Howells' November 2023
// kunit series), for GoogleTest.
//
// The helpers keep the kernel's names and argument orders so that a kernel
// test ports line by line. `kunit` here only owns what a test allocates and
// frees it when the test ends, last allocated first, as the actions of
// kunit_add_action_or_reset() run. Helpers that assert (the kernel's
// KUNIT_ASSERT_*) return early on failure: call them under
// ASSERT_NO_FATAL_FAILURE.
//
//   iov_test::kunit test;
//   iov::page** pages;
//   auto* buffer = static_cast<uint8_t*>(iov_kunit_create_buffer(&test, &pages, 256));
//   ASSERT_NO_FATAL_FAILURE(iov_kunit_load_kvec(&test, &iter, iov::READ, kvec, 8,
//                                               buffer, 0x100000, kvec_test_ranges));
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <utility>
#include <vector>

#include <iov/iov.hpp>
#include <iov/vmalloc.hpp>

#include "kit/iter_builder.hpp"

namespace iov_test {

// The kunit tests' buffer, as each test of the kernel's lib/kunit_iov_iter.c
// sizes it (bufsize = 0x100000).
inline constexpr size_t kBufSize = 0x100000;
inline constexpr size_t kNPages = kBufSize / iov::PAGE_SIZE;

using u8 = uint8_t;
using iov::bio_vec;
using iov::iov_iter;
using iov::kvec;
using iov::page;
using iov::PAGE_SIZE;
using iov::xarray;

// The test context: what the kernel's kunit_add_action_or_reset() and
// kunit_kcalloc() hang on struct kunit, and nothing else.
class kunit {
 public:
  kunit() = default;
  kunit(const kunit&) = delete;
  kunit& operator=(const kunit&) = delete;
  ~kunit() { release(); }

  // Runs fn when the test ends (or at release()), after everything added later.
  void defer(std::function<void()> fn) { actions_.push_back(std::move(fn)); }

  // Runs and forgets every deferred action, last added first.
  void release() {
    while (!actions_.empty()) {
      std::function<void()> fn = std::move(actions_.back());
      actions_.pop_back();
      fn();
    }
  }

 private:
  std::vector<std::function<void()>> actions_;
};

inline int kunit_add_action_or_reset(kunit* test, void (*action)(void*), void* data) {
  test->defer([action, data] { action(data); });
  return 0;
}

// Out of memory in a test is the machine's problem, not a test result.
[[noreturn]] inline void iov_kunit_oom(const char* what) {
  std::fprintf(stderr, "kunit_layouts: out of memory in %s\n", what);
  std::abort();
}

inline void* kunit_kcalloc(kunit* test, size_t n, size_t size, iov::gfp_t = iov::GFP_KERNEL) {
  void* p = std::calloc(n, size);
  if (p == nullptr) iov_kunit_oom("kunit_kcalloc");
  test->defer([p] { std::free(p); });
  return p;
}

// A test range. The kernel's series merged the kvec and bvec range structs
// into this one so the pattern helpers serve both: `page` is 0 for ranges of
// one flat buffer (kvec, iovec, ubuf, xarray) and the page index for bvec
// ranges (from/to are then offsets within that page). page < 0 ends a list.
struct iov_kunit_range {
  int page, from, to;
};

// Ranges for tests with address/offset ranges to play with (KVEC, IOVEC,
// UBUF) or a single blob to copy arbitrary chunks of (XARRAY).
inline constexpr iov_kunit_range kvec_test_ranges[] = {
    {0, 0x00002, 0x00002},  // Start with an empty range
    {0, 0x00027, 0x03000},  // Midpage to page end
    {0, 0x05193, 0x18794},  // Midpage to midpage
    {0, 0x20000, 0x20000},  // Empty range in the middle
    {0, 0x20000, 0x24000},  // Page start to page end
    {0, 0x24000, 0x27001},  // Page end to midpage
    {0, 0x29000, 0xffffb},  // Page start to midpage
    {0, 0xffffd, 0xffffe},  // Almost contig to last, ending in same page
    {-1, 0, 0},
};

// Ranges for tests with a list of partial pages to play with (BVEC).
inline constexpr iov_kunit_range bvec_test_ranges[] = {
    {0, 0x0002, 0x0002},  // Start with an empty range
    {1, 0x0027, 0x0893},  // Random part of page
    {2, 0x0193, 0x0794},  // Random part of page
    {3, 0x0000, 0x1000},  // Full page
    {4, 0x0000, 0x1000},  // Full page logically contig to last
    {5, 0x0000, 0x1000},  // Full page logically contig to last
    {6, 0x0000, 0x0ffb},  // Part page logically contig to last
    {6, 0x0ffd, 0x0ffe},  // Part of prev page, but not quite contig
    {-1, 0, 0},
};

// The pattern to fill with: mainline's current one, whose higher bytes make a
// byte landing a multiple of 256 bytes (a page, a segment) off show up.
inline u8 pattern(unsigned long x) {
  return static_cast<u8>(static_cast<u8>(x) + static_cast<u8>(x >> 8) + static_cast<u8>(x >> 16));
}

// The kernel allocates npages pages and vmap()s them into one virtually
// contiguous buffer. A page here is its own address, so the buffer is one
// alloc_pages() allocation and (*ppages)[i] is virt_to_page() of its i'th
// page: a bio_vec may run across them as across a kernel compound page.
inline void* iov_kunit_create_buffer(kunit* test, page*** ppages, size_t npages) {
  auto** pages = static_cast<page**>(kunit_kcalloc(test, npages, sizeof(page*)));
  *ppages = pages;

  unsigned order = 0;
  while ((size_t{1} << order) < npages) order++;
  page* first = iov::alloc_pages(iov::GFP_KERNEL, order);
  if (first == nullptr) iov_kunit_oom("iov_kunit_create_buffer");
  test->defer([first, order] { iov::free_pages(first, order); });

  auto* buffer = static_cast<u8*>(iov::page_address(first));
  for (size_t i = 0; i < npages; i++) pages[i] = iov::virt_to_page(buffer + i * PAGE_SIZE);
  return buffer;
}

// The frames of iov_kunit_create_buffer() without the mapping: each page
// allocated on its own, and the first quarter swapped with the third as
// mainline now does "to make sure that we don't get a physically contiguous
// buffer". Code that steps to `page + 1` where it should take the next
// segment's or xarray entry's page reads the wrong memory (and ASan says so).
inline void iov_kunit_create_scattered_buffer(kunit* test, page*** ppages, size_t npages) {
  auto** pages = static_cast<page**>(kunit_kcalloc(test, npages, sizeof(page*)));
  *ppages = pages;
  for (size_t i = 0; i < npages; i++) {
    pages[i] = iov::alloc_page(iov::GFP_KERNEL);
    if (pages[i] == nullptr) iov_kunit_oom("iov_kunit_create_scattered_buffer");
    test->defer([p = pages[i]] { iov::free_page(p); });
  }
  for (size_t i = 0; i < npages / 4; i++) std::swap(pages[i], pages[i + npages / 2]);
}

static inline void iov_kunit_unmap(void* data) { iov::vfree(data); }

// The kernel's iov_kunit_create_buffer() as mainline writes it now: the pages
// from alloc_pages_bulk(), the first quarter swapped with the third, and a
// vmap() with VM_MAP_PUT_PAGES, so that vfree() puts the pages and frees the
// array. One change: the pages ask for __GFP_VMAPPABLE, as only those can be
// mapped a second time here (vmalloc.hpp).
inline void* iov_kunit_create_vmap_buffer(kunit* test, page*** ppages, size_t npages) {
  page** pages;
  unsigned long got;
  void* buffer;

  pages = static_cast<page**>(std::calloc(npages, sizeof(page*)));
  if (pages == nullptr) iov_kunit_oom("iov_kunit_create_vmap_buffer");
  *ppages = pages;

  got = iov::alloc_pages_bulk(iov::GFP_KERNEL | iov::__GFP_VMAPPABLE, npages, pages);
  if (got != npages) {
    iov::release_pages(pages, static_cast<int>(got));
    std::free(pages);
    iov_kunit_oom("iov_kunit_create_vmap_buffer");
  }

  // Make sure that we don't get a physically contiguous buffer.
  for (size_t i = 0; i < npages / 4; ++i) std::swap(pages[i], pages[i + npages / 2]);

  buffer = iov::vmap(pages, static_cast<unsigned>(npages), iov::VM_MAP | iov::VM_MAP_PUT_PAGES, iov::PAGE_KERNEL);
  if (buffer == nullptr) {
    iov::release_pages(pages, static_cast<int>(got));
    std::free(pages);
  }
  EXPECT_NE(buffer, nullptr);

  if (buffer != nullptr) kunit_add_action_or_reset(test, iov_kunit_unmap, buffer);
  return buffer;
}

// Where the frames of a case come from: one allocation, pages allocated one
// by one (no flat address), or the kernel's vmap() of swapped pages.
enum class frames { contiguous, scattered, vmapped };

inline page** iov_kunit_create_pages(kunit* test, size_t npages, frames how) {
  page** pages;
  if (how == frames::contiguous)
    iov_kunit_create_buffer(test, &pages, npages);
  else if (how == frames::vmapped)
    iov_kunit_create_vmap_buffer(test, &pages, npages);
  else
    iov_kunit_create_scattered_buffer(test, &pages, npages);
  return pages;
}

// The fixture of the kunit ports: every case allocates through `test`, and
// TearDown frees all of it, so that ASan/LSan see every page, array and
// xarray go.
class kunit_fixture : public ::testing::Test {
 protected:
  void TearDown() override { test_.release(); }

  kunit test_;
  kunit* const test = &test_;
};

// Byte i of the frames pages[0], pages[1], ... in that order: what the
// kernel's vmap() of a page array shows, whether or not the frames are
// contiguous.
class iov_kunit_pages {
 public:
  explicit iov_kunit_pages(page* const* pages) : pages_(pages) {}
  u8& operator[](size_t i) const {
    return static_cast<u8*>(iov::page_address(pages_[i / PAGE_SIZE]))[i % PAGE_SIZE];
  }

 private:
  page* const* pages_;
};

// Build the reference pattern in the scratch buffer that we expect to see in
// the iterator buffer (ie. the result of copy *to*).
inline void iov_kunit_build_to_reference_pattern(kunit*, u8* scratch, size_t bufsize,
                                                 const iov_kunit_range* pr) {
  unsigned long patt = 0;

  std::memset(scratch, 0, bufsize);
  for (; pr->page >= 0; pr++) {
    u8* p = scratch + static_cast<size_t>(pr->page) * PAGE_SIZE;
    for (int i = pr->from; i < pr->to; i++) p[i] = pattern(patt++);
  }
}

// Build the reference pattern in the iterator buffer that we expect to see in
// the scratch buffer (ie. the result of copy *from*), the source having been
// filled with pattern(i) at byte i.
inline void iov_kunit_build_from_reference_pattern(kunit*, u8* buffer, size_t bufsize,
                                                   const iov_kunit_range* pr) {
  size_t i = 0;

  std::memset(buffer, 0, bufsize);
  for (; pr->page >= 0; pr++) {
    size_t patt = static_cast<size_t>(pr->page) * PAGE_SIZE;
    for (int j = pr->from; j < pr->to; j++) {
      buffer[i++] = pattern(patt + j);
      if (i >= bufsize) return;
    }
  }
}

// Compare two buffers byte by byte, reporting the first difference only.
// `buffer` is a u8 pointer or an iov_kunit_pages view.
template <class Bytes>
void iov_kunit_check_pattern(kunit*, const Bytes& buffer, const u8* scratch, size_t bufsize) {
  for (size_t i = 0; i < bufsize; i++) {
    if (buffer[i] != scratch[i]) {
      EXPECT_EQ(+buffer[i], +scratch[i]) << "at i=0x" << std::hex << i;
      return;
    }
  }
}

inline void iov_kunit_load_kvec(kunit*, iov_iter* iter, unsigned dir, kvec* kvec, unsigned kvmax,
                                void* buffer, size_t bufsize, const iov_kunit_range* pr) {
  size_t size = 0;
  unsigned i;

  for (i = 0; i < kvmax; i++, pr++) {
    if (pr->page < 0) break;
    ASSERT_GE(pr->to, pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), bufsize);
    kvec[i].iov_base = static_cast<u8*>(buffer) + pr->from;
    kvec[i].iov_len = static_cast<size_t>(pr->to - pr->from);
    size += static_cast<size_t>(pr->to - pr->from);
  }
  ASSERT_LE(size, bufsize);

  iov::iov_iter_kvec(iter, dir, kvec, i, size);
}

// The series' ITER_IOVEC twin of iov_kunit_load_kvec().
inline void iov_kunit_load_iovec(kunit*, iov_iter* iter, unsigned dir, ::iovec* iov,
                                 unsigned iovmax, u8* buffer, size_t bufsize,
                                 const iov_kunit_range* pr) {
  size_t size = 0;
  unsigned i;

  for (i = 0; i < iovmax; i++, pr++) {
    if (pr->page < 0) break;
    ASSERT_GE(pr->to, pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), bufsize);
    iov[i].iov_base = buffer + pr->from;
    iov[i].iov_len = static_cast<size_t>(pr->to - pr->from);
    size += static_cast<size_t>(pr->to - pr->from);
  }
  ASSERT_LE(size, bufsize);

  iov::iov_iter_init(iter, dir, iov, i, size);
}

// One bio_vec per range, except that a range starting a page that follows
// the previous range's last page in memory extends the previous bio_vec, as
// the block layer merges them.
inline void iov_kunit_load_bvec(kunit*, iov_iter* iter, unsigned dir, bio_vec* bvec,
                                unsigned bvmax, page** pages, size_t npages, size_t bufsize,
                                const iov_kunit_range* pr) {
  page *can_merge = nullptr, *pg;
  size_t size = 0;
  unsigned i;

  for (i = 0; i < bvmax; i++, pr++) {
    if (pr->page < 0) break;
    ASSERT_LT(static_cast<size_t>(pr->page), npages);
    ASSERT_LT(static_cast<size_t>(pr->page) * PAGE_SIZE, bufsize);
    ASSERT_GE(pr->from, 0);
    ASSERT_GE(pr->to, pr->from);
    ASSERT_LE(static_cast<size_t>(pr->to), PAGE_SIZE);

    pg = pages[pr->page];
    if (pr->from == 0 && pr->from != pr->to && pg == can_merge) {
      i--;
      bvec[i].bv_len += static_cast<unsigned>(pr->to);
    } else {
      iov::bvec_set_page(&bvec[i], pg, static_cast<unsigned>(pr->to - pr->from),
                         static_cast<unsigned>(pr->from));
    }

    size += static_cast<size_t>(pr->to - pr->from);
    if ((static_cast<size_t>(pr->to) & ~iov::PAGE_MASK) == 0)
      can_merge = pg + static_cast<size_t>(pr->to) / PAGE_SIZE;
    else
      can_merge = nullptr;
  }

  iov::iov_iter_bvec(iter, dir, bvec, i, size);
}

// An xarray that the test frees when it ends: that of an iter_builder the
// test owns (the builder destroys it), which iov_kunit_load_xarray() fills.
inline xarray* iov_kunit_create_xarray(kunit* test) {
  auto* b = new iter_builder(iov::ITER_XARRAY);
  test->defer([b] { delete b; });
  return b->xa();
}

// Stores pages[i] at index i, so byte offset b is in page b >> PAGE_SHIFT.
inline void iov_kunit_load_xarray(kunit*, iov_iter* iter, unsigned dir, xarray* xa, page** pages,
                                  size_t npages) {
  size_t size = 0;

  for (size_t i = 0; i < npages; i++) {
    void* x = iov::xa_store(xa, i, pages[i], iov::GFP_KERNEL);
    ASSERT_FALSE(iov::xa_is_err(x));
    size += PAGE_SIZE;
  }
  iov::iov_iter_xarray(iter, dir, xa, 0, size);
}

// A folio queue the test frees when it ends (not its folios: the buffer's
// pages), and its loader: one one-page folio a page, segments as they fill.
inline void iov_kunit_destroy_folioq(void* data) {
  for (iov::folio_queue *folioq = static_cast<iov::folio_queue*>(data), *next; folioq; folioq = next) {
    next = folioq->next;
    delete folioq;  // the folios are the buffer's pages, freed with it
  }
}

inline void iov_kunit_load_folioq(kunit*, iov_iter* iter, unsigned dir, iov::folio_queue* folioq, page** pages,
                                  size_t npages) {
  iov::folio_queue* p = folioq;
  size_t size = 0;

  for (size_t i = 0; i < npages; i++) {
    if (iov::folioq_full(p)) {
      p->next = new iov::folio_queue{};
      iov::folioq_init(p->next, 0);
      p->next->prev = p;
      p = p->next;
    }
    iov::folioq_append(p, iov::page_folio(pages[i]));
    size += PAGE_SIZE;
  }
  iov::iov_iter_folio_queue(iter, dir, folioq, 0, 0, size);
}

inline iov::folio_queue* iov_kunit_create_folioq(kunit* test) {
  auto* folioq = new iov::folio_queue{};
  kunit_add_action_or_reset(test, iov_kunit_destroy_folioq, folioq);
  iov::folioq_init(folioq, 0);
  return folioq;
}

// The loop of the kernel's extract_pages tests: extracts *iter to the end in
// iov_iter_extract_pages() calls of at most 100 KiB and 8 pages, checking
// that each call accounts for its bytes in iter->count and that each page and
// offset it returns is where the ranges *pr put the next byte:
// bpages[pr->page + from / PAGE_SIZE] at from % PAGE_SIZE. Empty ranges are
// stepped over. Returns the bytes of the starting count that no call
// returned (0 when the whole iterator was extracted).
inline size_t iov_kunit_extract_pages_and_check(kunit*, iov_iter* iter, page** bpages,
                                                size_t npages, const iov_kunit_range* pr) {
  page *pagelist[8], **pages = pagelist;
  size_t size = iter->count;
  int from = pr->from;

  do {
    size_t offset0 = LONG_MAX;

    for (page*& p : pagelist) p = reinterpret_cast<page*>(uintptr_t{0xaa55aa55aa55aa55ULL});

    ssize_t len = iov::iov_iter_extract_pages(iter, &pages, 100 * 1024, std::size(pagelist), 0,
                                              &offset0);
    EXPECT_GE(len, 0);
    if (len < 0) break;
    EXPECT_LE(static_cast<size_t>(len), size);
    EXPECT_EQ(iter->count, size - static_cast<size_t>(len));
    EXPECT_EQ(pages, pagelist) << "the caller's array pointer must not move";
    if (len == 0) break;
    size -= static_cast<size_t>(len);
    EXPECT_LT(offset0, PAGE_SIZE);
    if (offset0 >= PAGE_SIZE) break;

    for (size_t i = 0; i < std::size(pagelist); i++) {
      ssize_t part = std::min<ssize_t>(len, static_cast<ssize_t>(PAGE_SIZE - offset0));

      while (from == pr->to) {
        pr++;
        from = pr->from;
        if (pr->page < 0) {
          ADD_FAILURE() << "extracted beyond the last range";
          return size;
        }
      }
      size_t ix = static_cast<size_t>(pr->page) + static_cast<size_t>(from) / PAGE_SIZE;
      if (ix >= npages) {
        ADD_FAILURE() << "range page " << ix << " beyond the buffer";
        return size;
      }
      EXPECT_EQ(pagelist[i], bpages[ix]) << "page " << i << " of a call, byte 0x" << std::hex
                                         << from;
      EXPECT_EQ(offset0, static_cast<size_t>(from) % PAGE_SIZE) << "byte 0x" << std::hex << from;
      from += static_cast<int>(part);
      len -= part;
      if (len == 0) break;
      offset0 = 0;
    }
    EXPECT_EQ(len, 0) << "more bytes returned than fit in the page list";

    if (::testing::Test::HasFailure()) break;
  } while (iov::iov_iter_count(iter) > 0);

  return size;
}

}  // namespace iov_test
