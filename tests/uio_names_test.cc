// uio_names_test.cc: the names of the kernel's include/linux/uio.h that ports
// need beyond the core (iov_iter.hpp, position.hpp, extract.hpp, copy.hpp,
// copy_nocache.hpp): the current-segment accessors, the imports, dup_iter,
// npages_cap and gap alignment, get_pages2, fault-in, and the copy variants,
// each against hand-computed results from lib/iov_iter.c or the flat model.
//
//   ctest -R uio_names_test
#include <sys/mman.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/internal/outofline.hpp"
#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;
using bytes = std::vector<unsigned char>;

// Pages mapped for a test, with the protection of some changed, unmapped on exit.
class ProtectableMapping {
 public:
  explicit ProtectableMapping(size_t npages) : len_(npages * PAGE_SIZE) {
    p_ = static_cast<char*>(::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(p_, MAP_FAILED);
  }
  ~ProtectableMapping() { ::munmap(p_, len_); }
  char* page(size_t n) const { return p_ + n * PAGE_SIZE; }
  void protect(size_t n, int prot) const { EXPECT_EQ(::mprotect(page(n), PAGE_SIZE, prot), 0); }

 private:
  size_t len_;
  char* p_;
};

TEST(IterIov, CurrentSegmentOfIovecAndUbuf) {
  char a[100], b[50];
  ::iovec v[3] = {{a, 100}, {nullptr, 0}, {b, 50}};
  iov::iov_iter it;
  iov::iov_iter_init(&it, iov::ITER_SOURCE, v, 3, 150);
  iov::iov_iter_advance(&it, 30);
  EXPECT_EQ(iov::iter_iov(&it), &v[0]);
  EXPECT_EQ(iov::iter_iov_addr(&it), a + 30);
  EXPECT_EQ(iov::iter_iov_len(&it), 70u);
  ::iovec cur = iov::iov_iter_iovec(&it);
  EXPECT_EQ(cur.iov_base, a + 30);
  EXPECT_EQ(cur.iov_len, 70u);
  iov::iov_iter_truncate(&it, 20);
  EXPECT_EQ(iov::iov_iter_iovec(&it).iov_len, 20u) << "clamped to the count";
  iov::iov_iter_reexpand(&it, 120);
  iov::iov_iter_advance(&it, 70);  // steps over the empty segment too
  EXPECT_EQ(iov::iter_iov(&it), &v[2]);
  EXPECT_EQ(iov::iter_iov_len(&it), 50u);

  // UBUF: the kernel's overlay {ubuf, count}; iter_iov_len() is count - iov_offset.
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, a, 100);
  EXPECT_EQ(iov::iter_iov(&it)->iov_base, static_cast<void*>(a));
  EXPECT_EQ(iov::iter_iov(&it)->iov_len, 100u);
  iov::iov_iter_advance(&it, 10);
  EXPECT_EQ(iov::iter_iov_addr(&it), a + 10);
  EXPECT_EQ(iov::iter_iov_len(&it), 80u) << "mainline: iov_len (= count 90) - iov_offset (10)";
  EXPECT_EQ(iov::iov_iter_iovec(&it).iov_len, 80u);
}

TEST(IovLength, SumsTheSegments) {
  ::iovec v[4] = {{nullptr, 7}, {nullptr, 0}, {nullptr, 4096}, {nullptr, 1}};
  EXPECT_EQ(iov::iov_length(v, 4), 4104u);
  EXPECT_EQ(iov::iov_length(v, 1), 7u);
  EXPECT_EQ(iov::iov_length(v, 0), 0u);
}

TEST(ImportUbuf, CapsAtMaxRwCountAndRefusesBadRanges) {
  char buf[64];
  iov::iov_iter it;
  ASSERT_EQ(iov::import_ubuf(iov::ITER_DEST, buf, sizeof(buf), &it), 0);
  EXPECT_TRUE(iov::iter_is_ubuf(&it));
  EXPECT_EQ(iov::iov_iter_rw(&it), static_cast<int>(iov::ITER_DEST));
  EXPECT_EQ(it.count, sizeof(buf));
  // A huge length is capped before the range check, as the kernel's. (From
  // a static buffer: the stack may lie within MAX_RW_COUNT of the top of the
  // user address space, where the capped range is rightly refused.)
  static char low[64];
  ASSERT_EQ(iov::import_ubuf(iov::ITER_SOURCE, low, SIZE_MAX / 2, &it), 0);
  EXPECT_EQ(it.count, iov::MAX_RW_COUNT);
  iov::iov_iter before = it;
  EXPECT_EQ(iov::import_ubuf(iov::ITER_SOURCE, reinterpret_cast<void*>(UINTPTR_MAX - 10), 100, &it), -EFAULT);
  EXPECT_EQ(iov_test::state_of(it), iov_test::state_of(before)) << "unchanged on error";
#if defined(__x86_64__)
  EXPECT_EQ(iov::import_ubuf(iov::ITER_SOURCE, reinterpret_cast<void*>(uintptr_t{1} << 63), 1, &it), -EFAULT);
#endif
}

TEST(ImportIovec, OneSegmentIsUbuf) {
  char buf[300];
  ::iovec uvec[1] = {{buf + 5, 200}};
  ::iovec fast[8];
  ::iovec* iov = fast;
  iov::iov_iter it;
  EXPECT_EQ(iov::import_iovec(iov::ITER_DEST, uvec, 1, 8, &iov, &it), 200);
  EXPECT_EQ(iov, nullptr) << "nothing to free";
  EXPECT_TRUE(iov::iter_is_ubuf(&it));
  EXPECT_EQ(it.ubuf, buf + 5);
  EXPECT_EQ(it.count, 200u);
  EXPECT_EQ(it.nr_segs, 1u);
}

TEST(ImportIovec, SeveralSegmentsUseTheFastArrayOrAnAllocatedOne) {
  char buf[1000];
  ::iovec uvec[5] = {{buf, 10}, {buf + 100, 0}, {buf + 200, 300}, {buf + 600, 1}, {buf + 700, 299}};
  for (unsigned fast_segs : {8u, 5u, 4u, 0u}) {
    SCOPED_TRACE(fast_segs);
    ::iovec fast[8];
    ::iovec* iov = fast;
    iov::iov_iter it;
    ASSERT_EQ(iov::import_iovec(iov::ITER_SOURCE, uvec, 5, fast_segs, &iov, &it), 610);
    EXPECT_TRUE(iov::iter_is_iovec(&it));
    EXPECT_EQ(it.nr_segs, 5u);
    EXPECT_EQ(iov::iov_iter_rw(&it), static_cast<int>(iov::ITER_SOURCE));
    if (fast_segs >= 5) {
      EXPECT_EQ(iov, nullptr);
      EXPECT_EQ(it.iov, fast);
    } else {
      ASSERT_NE(iov, nullptr);
      EXPECT_EQ(it.iov, iov) << "the iterator walks the returned array";
    }
    EXPECT_EQ(std::memcmp(it.iov, uvec, sizeof(uvec)), 0) << "a copy of the user's array";
    bytes out(610);
    ASSERT_EQ(iov::copy_from_iter(out.data(), out.size(), &it), 610u);
    std::free(iov);
  }
}

TEST(ImportIovec, CapsTheTotalAtMaxRwCount) {
  // Only the lengths matter: nothing is read. Not on the stack: near the top
  // of the user half, a 2 GiB segment from there would be refused (-EFAULT)
  // on some address-space layouts.
  static char buf[16];
  const size_t big = iov::MAX_RW_COUNT - 100;
  ::iovec uvec[3] = {{buf, big}, {buf, 300}, {buf, 50}};
  ::iovec fast[3];
  ::iovec* iov = fast;
  iov::iov_iter it;
  ASSERT_EQ(iov::import_iovec(iov::ITER_SOURCE, uvec, 3, 3, &iov, &it), static_cast<ssize_t>(iov::MAX_RW_COUNT));
  EXPECT_EQ(fast[0].iov_len, big);
  EXPECT_EQ(fast[1].iov_len, 100u) << "the segment crossing the cap is shortened";
  EXPECT_EQ(fast[2].iov_len, 0u);
  EXPECT_EQ(it.count, iov::MAX_RW_COUNT);
}

TEST(ImportIovec, Errors) {
  char buf[16];
  ::iovec fast[4];
  ::iovec* iov;
  iov::iov_iter it;
  // A length negative as ssize_t: -EINVAL, for one segment and for several.
  ::iovec neg[2] = {{buf, static_cast<size_t>(-1)}, {buf, 1}};
  iov = fast;
  EXPECT_EQ(iov::import_iovec(iov::ITER_DEST, neg, 1, 4, &iov, &it), -EINVAL);
  EXPECT_EQ(iov, nullptr);
  iov = fast;
  EXPECT_EQ(iov::import_iovec(iov::ITER_DEST, neg, 2, 4, &iov, &it), -EINVAL);
  EXPECT_EQ(iov, nullptr);
  // More than UIO_MAXIOV segments.
  std::vector<::iovec> many(UIO_MAXIOV + 1, ::iovec{buf, 1});
  iov = fast;
  EXPECT_EQ(iov::import_iovec(iov::ITER_DEST, many.data(), UIO_MAXIOV + 1, 4, &iov, &it), -EINVAL);
  EXPECT_EQ(iov, nullptr);
  // A segment outside the user half, with an allocated array (freed by the import).
  ::iovec bad[5] = {{buf, 1}, {buf, 1}, {buf, 1}, {buf, 1}, {reinterpret_cast<void*>(UINTPTR_MAX - 4), 8}};
  iov = fast;
  EXPECT_EQ(iov::import_iovec(iov::ITER_DEST, bad, 5, 4, &iov, &it), -EFAULT);
  EXPECT_EQ(iov, nullptr);
  // Zero segments: an empty ITER_IOVEC, as Linux has always returned 0.
  iov = fast;
  EXPECT_EQ(iov::import_iovec(iov::ITER_DEST, bad, 0, 4, &iov, &it), 0);
  EXPECT_TRUE(iov::iter_is_iovec(&it));
  EXPECT_EQ(it.count, 0u);
  EXPECT_EQ(iov, nullptr);
}

TEST(IovecFromUser, NativeAndCompat) {
  char buf[64];
  ::iovec uvec[2] = {{buf, 3}, {buf + 8, 5}}, fast[2];
  EXPECT_EQ(iov::iovec_from_user(uvec, 2, 2, fast, false), fast);
  EXPECT_EQ(fast[1].iov_base, buf + 8);
  ::iovec* got = iov::iovec_from_user(uvec, 2, 1, fast, false);
  ASSERT_FALSE(iov::IS_ERR(got));
  ASSERT_NE(got, fast);
  EXPECT_EQ(got[0].iov_len, 3u);
  std::free(got);
  EXPECT_EQ(iov::iovec_from_user(uvec, 0, 0, fast, false), fast);
  EXPECT_EQ(iov::PTR_ERR(iov::iovec_from_user(uvec, UIO_MAXIOV + 1, 0, fast, false)), -EINVAL);
  // A 32-bit process's array: {u32 base, u32 len}; a len negative as s32 is -EINVAL.
  uint32_t compat[4] = {0x1000, 7, 0x2000, 9};
  ASSERT_EQ(iov::iovec_from_user(reinterpret_cast<::iovec*>(compat), 2, 2, fast, true), fast);
  EXPECT_EQ(fast[0].iov_base, reinterpret_cast<void*>(0x1000));
  EXPECT_EQ(fast[0].iov_len, 7u);
  EXPECT_EQ(fast[1].iov_base, reinterpret_cast<void*>(0x2000));
  EXPECT_EQ(fast[1].iov_len, 9u);
  compat[3] = 0x80000000u;
  EXPECT_EQ(iov::PTR_ERR(iov::iovec_from_user(reinterpret_cast<::iovec*>(compat), 2, 2, fast, true)), -EINVAL);
}

TEST(DupIter, CopiesTheSegmentsFromTheCurrentOneOn) {
  for (const auto& l : iov_test::edge_layouts()) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind())), dup;
    iov::iov_iter_advance(&it, l->total() / 3);
    const void* copy = iov::dup_iter(&dup, &it, iov::GFP_KERNEL);
    bool has_array = iov::iter_is_iovec(&it) || iov::iov_iter_is_kvec(&it) || iov::iov_iter_is_bvec(&it);
    if (!has_array) {
      EXPECT_EQ(copy, nullptr);
      EXPECT_EQ(iov_test::state_of(dup), iov_test::state_of(it));
      continue;
    }
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(static_cast<const void*>(dup.bvec), copy);
    EXPECT_NE(static_cast<const void*>(dup.bvec), static_cast<const void*>(it.bvec));
    EXPECT_EQ(dup.count, it.count);
    EXPECT_EQ(dup.iov_offset, it.iov_offset);
    EXPECT_EQ(dup.nr_segs, it.nr_segs);
    // The duplicate reads the same bytes as the original.
    bytes a(it.count), b(it.count);
    iov::iov_iter orig = it;
    EXPECT_EQ(iov::copy_from_iter(a.data(), a.size(), &orig), a.size());
    EXPECT_EQ(iov::copy_from_iter(b.data(), b.size(), &dup), b.size());
    EXPECT_EQ(a, b);
    std::free(const_cast<void*>(copy));
  }
}

// An iterator of no segments may have no array (the kernel's callers pass
// NULL with nr_segs 0): the duplicate is an empty array of its own.
TEST(DupIter, NoSegmentsAndNoArray) {
  for (auto init : {+[](iov::iov_iter* i) { iov::iov_iter_init(i, iov::ITER_DEST, nullptr, 0, 0); },
                    +[](iov::iov_iter* i) { iov::iov_iter_kvec(i, iov::ITER_DEST, nullptr, 0, 0); },
                    +[](iov::iov_iter* i) { iov::iov_iter_bvec(i, iov::ITER_DEST, nullptr, 0, 0); }}) {
    iov::iov_iter it, dup;
    init(&it);
    const void* copy = iov::dup_iter(&dup, &it, iov::GFP_KERNEL);
    EXPECT_NE(copy, nullptr);
    EXPECT_EQ(dup.count, 0u);
    EXPECT_EQ(dup.nr_segs, 0u);
    std::free(const_cast<void*>(copy));
  }
}

TEST(NpagesCap, CountsTheFirstBytesAndRestoresTheCount) {
  for (const auto& l : iov_test::edge_layouts()) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
    for (size_t cap : {size_t{0}, size_t{1}, PAGE_SIZE, l->total() / 2, l->total(), l->total() + 7}) {
      iov::iov_iter model = it;
      iov::iov_iter_truncate(&model, cap);
      int want = iov::iov_iter_npages(&model, INT_MAX);
      EXPECT_EQ(iov::iov_iter_npages_cap(&it, INT_MAX, cap), want) << "cap " << cap;
      EXPECT_EQ(it.count, l->total()) << "count restored";
      EXPECT_EQ(iov::iov_iter_npages_cap(&it, 1, cap), std::min(want, 1));
    }
  }
}

TEST(GapAlignment, OrsEachStartWithThePreviousEnd) {
  alignas(4096) static char buf[4 * 4096];
  ::iovec v[4] = {{buf + 512, 1024}, {buf + 4096, 0}, {buf + 8192, 512}, {buf + 12288 + 8, 100}};
  iov::iov_iter it;
  iov::iov_iter_init(&it, iov::ITER_SOURCE, v, 4, 1024 + 512 + 100);
  auto addr = [](const void* p) { return reinterpret_cast<unsigned long>(p); };
  unsigned long want = (addr(buf + 8192) | addr(buf + 1536)) | (addr(buf + 12288 + 8) | addr(buf + 8192 + 512));
  EXPECT_EQ(iov::iov_iter_gap_alignment(&it), want);
  // The count stops the scan: with 1024 bytes, there is no gap.
  iov::iov_iter_truncate(&it, 1024);
  EXPECT_EQ(iov::iov_iter_gap_alignment(&it), 0u);
  // iov_offset is ignored, as the kernel's.
  iov::iov_iter_reexpand(&it, 1636);
  iov::iov_iter_advance(&it, 10);
  EXPECT_EQ(iov::iov_iter_gap_alignment(&it), want);
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, buf + 3, 5);
  EXPECT_EQ(iov::iov_iter_gap_alignment(&it), 0u);
  iov::kvec kv = {buf, 10};
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, &kv, 1, 10);
  EXPECT_EQ(iov::iov_iter_gap_alignment(&it), static_cast<unsigned long>(~0U)) << "the kernel's WARN_ON value";
}

// The pages come with a reference each (get_pages_test.cc counts them); a
// compound allocation gives each frame one to take.
struct CompoundRun {
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, 2);
  ~CompoundRun() { iov::__free_pages(p, 2); }
  iov::page* get() const { return p; }
  unsigned char* bytes() const { return reinterpret_cast<unsigned char*>(p); }
};
void put_pages(iov::page** pages, size_t n) {
  for (size_t k = 0; k < n; k++)
    iov::put_page(pages[k]);
}

TEST(GetPages2, UserBackedPagesOfTheFirstSegment) {
  CompoundRun run;
  char* base = reinterpret_cast<char*>(run.bytes());
  ::iovec v[3] = {{base, 0}, {base + 100, 2 * PAGE_SIZE}, {base, 10}};
  iov::iov_iter it;
  iov::iov_iter_init(&it, iov::ITER_DEST, v, 3, 2 * PAGE_SIZE + 10);
  iov::page* pages[8];
  size_t start = 99;
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 8, &start), static_cast<ssize_t>(2 * PAGE_SIZE));
  EXPECT_EQ(start, 100u);
  EXPECT_EQ(pages[0], run.get());
  EXPECT_EQ(pages[2], run.get() + 2);
  EXPECT_EQ(it.count, 10u);
  put_pages(pages, 3);
  // maxpages bounds the bytes: one page from offset 100.
  iov::iov_iter_init(&it, iov::ITER_DEST, v, 3, 2 * PAGE_SIZE + 10);
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 1, &start), static_cast<ssize_t>(PAGE_SIZE - 100));
  put_pages(pages, 1);
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 0, &start), 0) << "maxpages 0";
}

TEST(GetPages2, BvecStopsAtTheEndOfTheBvec) {
  CompoundRun run;
  iov::bio_vec bv[2] = {{run.get(), 5000, 3000}, {run.get(), 100, 0}};
  iov::iov_iter it;
  iov::iov_iter_bvec(&it, iov::ITER_SOURCE, bv, 2, 5100);
  iov::page* pages[4];
  size_t start;
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, SIZE_MAX, 4, &start), 5000);
  EXPECT_EQ(start, 3000u);
  EXPECT_EQ(pages[0], run.get());
  EXPECT_EQ(pages[1], run.get() + 1);
  EXPECT_EQ(it.bvec, &bv[1]) << "stepped into the next bvec";
  EXPECT_EQ(it.iov_offset, 0u);
  EXPECT_EQ(it.nr_segs, 1u);
  put_pages(pages, 2);
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, 40, 4, &start), 40);
  EXPECT_EQ(it.iov_offset, 40u);
  put_pages(pages, 1);
}

TEST(GetPages2, KvecAndDiscardAreEfault) {
  char buf[10];
  iov::kvec kv = {buf, 10};
  iov::iov_iter it;
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, &kv, 1, 10);
  iov::page* pages[2];
  size_t start;
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, 10, 2, &start), -EFAULT);
  iov::iov_iter_discard(&it, iov::ITER_DEST, 10);
  EXPECT_EQ(iov::iov_iter_get_pages2(&it, pages, 10, 2, &start), -EFAULT);
}

TEST(GetPagesAlloc2, AllocatesTheArray) {
  auto l = iov_test::Layout::make_xarray(PAGE_SIZE * 3 + 7, 3 * PAGE_SIZE);
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::page** pages = nullptr;
  size_t start;
  EXPECT_EQ(iov::iov_iter_get_pages_alloc2(&it, &pages, SIZE_MAX, &start), static_cast<ssize_t>(3 * PAGE_SIZE));
  ASSERT_NE(pages, nullptr);
  EXPECT_EQ(start, 7u);
  for (size_t k = 0; k < 4; k++)
    EXPECT_EQ(pages[k], l->xa_page(k));
  put_pages(pages, 4);
  std::free(pages);
  EXPECT_EQ(iov::iov_iter_get_pages_alloc2(&it, &pages, SIZE_MAX, &start), 0);
  EXPECT_EQ(pages, nullptr) << "freed and cleared when nothing was got";
  EXPECT_FALSE(iov::iov_iter_extract_will_pin(&it));
}

TEST(FaultIn, CountsTheBytesFromTheFirstInaccessiblePage) {
  ProtectableMapping m(4);
  m.protect(2, PROT_NONE);
  char* a = m.page(0) + 100;
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, a, 4 * PAGE_SIZE - 100);
  EXPECT_EQ(iov::fault_in_iov_iter_readable(&it, PAGE_SIZE), 0u);
  // Pages 0 and 1 are readable; the rest of the range, from page 2 on, is not.
  size_t want = (4 * PAGE_SIZE - 100) - (2 * PAGE_SIZE - 100);
  EXPECT_EQ(iov::fault_in_iov_iter_readable(&it, SIZE_MAX), SIZE_MAX - (2 * PAGE_SIZE - 100))
      << "size beyond the count counts as not faulted in";
  EXPECT_EQ(iov::fault_in_iov_iter_readable(&it, it.count), want);
  m.protect(1, PROT_READ);
  EXPECT_EQ(iov::fault_in_iov_iter_writeable(&it, it.count), it.count - (PAGE_SIZE - 100));
  EXPECT_EQ(iov::fault_in_iov_iter_readable(&it, it.count), want) << "read-only is readable";
  // IOVEC: segments in order; an inaccessible first page counts the whole rest.
  ::iovec v[3] = {{m.page(0), 10}, {m.page(3), 0}, {m.page(2) + 5, 20}};
  iov::iov_iter_init(&it, iov::ITER_SOURCE, v, 3, 30);
  EXPECT_EQ(iov::fault_in_iov_iter_readable(&it, 30), 20u);
  EXPECT_EQ(iov::fault_in_iov_iter_readable(&it, 10), 0u);
  m.protect(2, PROT_READ | PROT_WRITE);
  EXPECT_EQ(iov::fault_in_iov_iter_readable(&it, 30), 0u);
  // Kernel-backed iterators have nothing to fault in.
  iov::kvec kv = {m.page(1), 10};
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, &kv, 1, 10);
  EXPECT_EQ(iov::fault_in_iov_iter_writeable(&it, 10), 0u);
}

TEST(CopyPageToIterNofault, StopsAtAnUnwritablePiece) {
  ProtectableMapping m(3);
  m.protect(1, PROT_READ);
  iov_test::PageRun src(1);
  auto data = iov_test::random_bytes(7, 2 * PAGE_SIZE);
  std::memcpy(src.bytes(), data.data(), data.size());
  ::iovec v[2] = {{m.page(0) + PAGE_SIZE - 300, 300}, {m.page(1), 500}};
  for (int form = 0; form < 2; form++) {
    iov::iov_iter it;
    iov::iov_iter_init(&it, iov::ITER_DEST, v, 2, 800);
    size_t n = form ? iov::internal::outofline::copy_page_to_iter_nofault(src.get(), 10, 800, &it)
                    : iov::copy_page_to_iter_nofault(src.get(), 10, 800, &it);
    EXPECT_EQ(n, 300u) << "the read-only segment takes nothing";
    EXPECT_EQ(it.count, 500u);
    EXPECT_EQ(std::memcmp(m.page(0) + PAGE_SIZE - 300, data.data() + 10, 300), 0);
  }
  // Kernel memory, across the page boundary of the source.
  bytes out(1000);
  iov::kvec kv = {out.data(), out.size()};
  iov::iov_iter it;
  iov::iov_iter_kvec(&it, iov::ITER_DEST, &kv, 1, out.size());
  EXPECT_EQ(iov::copy_page_to_iter_nofault(src.get(), PAGE_SIZE - 400, 1000, &it), 1000u);
  EXPECT_EQ(std::memcmp(out.data(), data.data() + PAGE_SIZE - 400, 1000), 0);
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, &kv, 1, out.size());
  EXPECT_EQ(iov::copy_page_to_iter_nofault(src.get(), 0, 10, &it), 0u) << "wrong direction: WARN, 0";
}

TEST(CopyVariants, FollowTheFlatModel) {
  for (uint64_t seed : iov_test::test_seeds({31, 32})) {
    SCOPED_TRACE(testing::Message() << "IOV_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    for (const auto& l : iov_test::mixed_layouts(seed, 3)) {
      SCOPED_TRACE(iov_test::kind_name(l->kind()));
      if (l->kind() == iov_test::Kind::discard)
        continue;
      const size_t total = l->reachable();
      auto src = iov_test::random_bytes(seed + 1, total + 5);
      // copy_mc_to_iter: copy_to_iter.
      bytes model = l->gather();
      iov::iov_iter it = l->iter(iov::ITER_DEST);
      size_t n = std::uniform_int_distribution<size_t>(0, total)(rng);
      EXPECT_EQ(iov::copy_mc_to_iter(src.data(), n, &it), n);
      std::copy_n(src.begin(), n, model.begin());
      EXPECT_EQ(l->gather(), model);
      EXPECT_EQ(it.count, l->total() - n);
      // copy_from_iter_flushcache and copy_from_iter_full_nocache: read back.
      for (int form = 0; form < 3; form++) {
        it = l->iter(iov::ITER_SOURCE);
        bytes out(total + 5, 0xee), want = out;
        std::copy_n(model.begin(), total, want.begin());
        if (form == 0) {
          EXPECT_EQ(iov::copy_from_iter_flushcache(out.data(), total + 5, &it), total);
        } else {
          bool full = form == 1 ? iov::copy_from_iter_full_nocache(out.data(), total, &it)
                                : iov::internal::outofline::copy_from_iter_full_nocache(out.data(), total, &it);
          EXPECT_TRUE(full);
        }
        EXPECT_EQ(out, want);
        EXPECT_EQ(it.count, l->total() - total);
      }
      // All or nothing: asking one byte more than there is reverts.
      it = l->iter(iov::ITER_SOURCE);
      iov::iov_iter_advance(&it, total / 2);
      iov::iov_iter before = it;
      bytes out(l->total() + 1);
      EXPECT_FALSE(iov::copy_from_iter_full_nocache(out.data(), it.count + 1, &it));
      EXPECT_EQ(it.count, before.count) << "reverted";
      EXPECT_EQ(iov_test::first_piece(it), iov_test::first_piece(before));
    }
  }
}

TEST(Discard, SourceDirectionIsTheKernelsBug) {
#if IOV_CHECKS
  iov::iov_iter it;
  EXPECT_DEATH(iov::iov_iter_discard(&it, iov::ITER_SOURCE, 10), "iov_iter_discard: direction must be ITER_DEST");
#else
  iov::iov_iter it;
  iov::iov_iter_discard(&it, iov::ITER_SOURCE, 10);  // checks off: trusted, and made ITER_DEST
  EXPECT_EQ(iov::iov_iter_rw(&it), static_cast<int>(iov::ITER_DEST));
  EXPECT_EQ(it.count, 10u);
#endif
}

}  // namespace
