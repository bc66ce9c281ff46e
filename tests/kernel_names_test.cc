// kernel_names_test.cc: names a kernel-style port meets that iov lacked
// (page.hpp, folio.hpp, copy.hpp, extract.hpp): PAGE_ALIGN, page_to_pfn and
// pfn_to_page, PageHighMem, unpin_user_page(s), folio_next,
// offset_in_folio, folio_test_highmem, folio_zero_segment,
// copy_page_from_iter_atomic, UIO_FASTIOV, with the kernel's meaning.
//
//   ctest -R kernel_names_test
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"

namespace {

using iov::PAGE_SIZE;

TEST(KernelNames, PageAlignRoundsUpToAPage) {
  static_assert(iov::PAGE_ALIGN(0ul) == 0);
  static_assert(iov::PAGE_ALIGN(1ul) == PAGE_SIZE);
  static_assert(iov::PAGE_ALIGN(4096u) == 4096u);
  static_assert(iov::PAGE_ALIGN(4097ull) == 8192ull);
  EXPECT_EQ(iov::UIO_FASTIOV, 8u);
}

TEST(KernelNames, PfnRoundTripsAndThereIsNoHighmem) {
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, 2);
  ASSERT_NE(p, nullptr);
  unsigned long pfn = iov::page_to_pfn(p);
  EXPECT_EQ(iov::pfn_to_page(pfn), p);
  EXPECT_EQ(iov::page_to_pfn(p + 3), pfn + 3);
  EXPECT_FALSE(iov::PageHighMem(p));
  iov::folio* f = iov::page_folio(p + 2);
  EXPECT_FALSE(iov::folio_test_highmem(f));
  EXPECT_EQ(iov::folio_next(f), reinterpret_cast<iov::folio*>(p + 4));
  unsigned char* base = iov::folio_address(f);
  EXPECT_EQ(iov::offset_in_folio(f, base + 3 * PAGE_SIZE + 17), 3 * PAGE_SIZE + 17);

  std::memset(base, 0xff, 4 * PAGE_SIZE);
  iov::folio_zero_segment(f, 100, 2 * PAGE_SIZE + 5);
  for (size_t k = 0; k < 4 * PAGE_SIZE; k++)
    ASSERT_EQ(base[k], (k >= 100 && k < 2 * PAGE_SIZE + 5) ? 0 : 0xff) << k;
  iov::folio_zero_segment(f, 50, 40);  // an inverted range zeroes nothing
  EXPECT_EQ(base[45], 0xff);

  // Nothing was pinned, so unpinning changes no count.
  int before = iov::page_ref_count(p);
  iov::unpin_user_page(p);
  iov::page* pages[2] = {p, p + 1};
  iov::unpin_user_pages(pages, 2);
  EXPECT_EQ(iov::page_ref_count(p), before);
  iov::__free_pages(p, 2);
}

TEST(KernelNames, CopyPageFromIterAtomicCopiesAsTheSleepingOne) {
  std::vector<unsigned char> src(6000);
  for (size_t k = 0; k < src.size(); k++)
    src[k] = static_cast<unsigned char>(k * 13 + 1);
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, 1);
  iov::kvec kv = {src.data(), src.size()};
  iov::iov_iter it;
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, &kv, 1, src.size());
  EXPECT_EQ(iov::copy_page_from_iter_atomic(p, 1000, 6000, &it), 6000u);
  EXPECT_EQ(std::memcmp(static_cast<unsigned char*>(iov::page_address(p)) + 1000, src.data(), 6000), 0);
  EXPECT_EQ(iov::iov_iter_count(&it), 0u);
  iov::__free_pages(p, 1);
}

}  // namespace
