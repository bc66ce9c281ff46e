// vmalloc_test.cc: vmap(), vunmap(), vmalloc()/vzalloc()/vfree() and the way
// back from an address (vmalloc_to_page, is_vmalloc_addr), vmalloc.hpp,
// against a model: byte i of a mapping of pages[0..n) is byte i % PAGE_SIZE
// of pages[i / PAGE_SIZE]'s own frame, whichever of the two addresses writes
// it. Also the shared pool behind __GFP_VMAPPABLE (page.hpp): its frames are
// handed out, zeroed and given back as the default pool's, and the
// allocator's counters return to their start once the pages are put.
//
//   ctest -R vmalloc_test
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "iov/vmalloc.hpp"

namespace {

using iov::PAGE_SIZE;
using iov::page;

constexpr iov::gfp_t kVmappable = iov::GFP_KERNEL | iov::__GFP_VMAPPABLE;

#if IOV_CHECKS
#define EXPECT_BUG(statement, what) EXPECT_DEATH(statement, "iov: BUG: .*" what)
#else
#define EXPECT_BUG(statement, what) statement
#endif

unsigned char tag(size_t i, unsigned seed) { return static_cast<unsigned char>((i * 131 + seed + (i >> 12)) & 0xff); }

// n single pages from the shared pool, shuffled so that no two neighbours
// in the array are neighbours in memory by construction.
std::vector<page*> shuffled_pages(size_t n, unsigned seed) {
  std::vector<page*> pages(n);
  for (page*& p : pages) {
    p = iov::alloc_page(kVmappable);
    EXPECT_NE(p, nullptr);
  }
  std::shuffle(pages.begin(), pages.end(), std::mt19937(seed));
  return pages;
}

void put_all(const std::vector<page*>& pages) {
  for (page* p : pages) iov::put_page(p);
}

size_t in_use() {
  iov::page_alloc_drain_thread_cache();
  return iov::page_alloc_read_stats().frames_in_use;
}

// Writes through one address, reads through the other, both ways.
void check_aliases(unsigned char* mapped, const std::vector<page*>& pages, unsigned seed) {
  size_t bytes = pages.size() * PAGE_SIZE;
  for (size_t i = 0; i < bytes; i++) mapped[i] = tag(i, seed);
  for (size_t i = 0; i < bytes; i++) {
    auto* frame = static_cast<unsigned char*>(iov::page_address(pages[i / PAGE_SIZE]));
    ASSERT_EQ(frame[i % PAGE_SIZE], tag(i, seed)) << "byte " << i;
    frame[i % PAGE_SIZE] = tag(i, seed + 1);
  }
  for (size_t i = 0; i < bytes; i++) ASSERT_EQ(mapped[i], tag(i, seed + 1)) << "byte " << i;
}

TEST(Vmap, MapsThePagesInArrayOrder) {
  std::vector<page*> pages = shuffled_pages(37, 1);
  auto* mapped = static_cast<unsigned char*>(iov::vmap(pages.data(), 37, iov::VM_MAP, iov::PAGE_KERNEL));
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapped) % PAGE_SIZE, 0u);
  check_aliases(mapped, pages, 7);

  for (size_t i = 0; i < pages.size() * PAGE_SIZE; i += 997) {
    EXPECT_TRUE(iov::is_vmalloc_addr(mapped + i));
    EXPECT_EQ(iov::vmalloc_to_page(mapped + i), pages[i / PAGE_SIZE]) << "byte " << i;
    EXPECT_EQ(iov::vmalloc_to_pfn(mapped + i), iov::page_to_pfn(pages[i / PAGE_SIZE]));
  }
  // The guard page after the area is in the range and maps nothing.
  EXPECT_TRUE(iov::is_vmalloc_addr(mapped + 37 * PAGE_SIZE));
  EXPECT_EQ(iov::vmalloc_to_page(mapped + 37 * PAGE_SIZE), nullptr);
  for (page* p : pages) EXPECT_FALSE(iov::is_vmalloc_addr(iov::page_address(p)));
  int on_stack;
  EXPECT_FALSE(iov::is_vmalloc_addr(&on_stack));
  EXPECT_FALSE(iov::is_vmalloc_addr(iov::ERR_PTR(-ENOMEM)));
  EXPECT_FALSE(iov::is_vmalloc_addr(nullptr));
  EXPECT_EQ(iov::vmalloc_to_page(&on_stack), nullptr);

  iov::vunmap(mapped);
  EXPECT_EQ(iov::vmalloc_to_page(mapped), nullptr);
  // The pages are the caller's still, with what was written through the alias.
  for (size_t i = 0; i < pages.size() * PAGE_SIZE; i += 101) {
    EXPECT_EQ(iov::page_ref_count(pages[i / PAGE_SIZE]), 1);
    EXPECT_EQ(static_cast<unsigned char*>(iov::page_address(pages[i / PAGE_SIZE]))[i % PAGE_SIZE], tag(i, 8));
  }
  put_all(pages);
}

TEST(Vmap, MapsTheFramesOfHighOrderAndDirectAllocations) {
  for (unsigned order : {3u, 10u}) {
    SCOPED_TRACE(order);
    page* head = iov::alloc_pages(kVmappable | iov::__GFP_COMP, order);
    ASSERT_NE(head, nullptr);
    size_t n = size_t{1} << order;
    std::vector<page*> pages(n);
    for (size_t k = 0; k < n; k++) pages[k] = head + (n - 1 - k);  // backwards
    auto* mapped = static_cast<unsigned char*>(
        iov::vmap(pages.data(), static_cast<unsigned>(n), iov::VM_MAP, iov::PAGE_KERNEL));
    ASSERT_NE(mapped, nullptr);
    check_aliases(mapped, pages, order);
    EXPECT_EQ(iov::vmalloc_to_page(mapped + PAGE_SIZE + 5), pages[1]);
    iov::vunmap(mapped);
    iov::__free_pages(head, order);
  }
}

TEST(Vmap, SamePageTwiceIsOneFrameAtTwoAddresses) {
  page* p = iov::alloc_page(kVmappable);
  ASSERT_NE(p, nullptr);
  page* twice[] = {p, p};
  auto* mapped = static_cast<unsigned char*>(iov::vmap(twice, 2, iov::VM_MAP, iov::PAGE_KERNEL));
  ASSERT_NE(mapped, nullptr);
  mapped[10] = 0x5a;
  EXPECT_EQ(mapped[PAGE_SIZE + 10], 0x5a);
  EXPECT_EQ(static_cast<unsigned char*>(iov::page_address(p))[10], 0x5a);
  iov::vunmap(mapped);
  iov::__free_page(p);
}

TEST(Vmap, AreasAreReusedAfterVunmap) {
  // 20000 areas of 17 pages would need 1.4 GiB of range without reuse; the
  // first-fit list hands back what vunmap returned.
  std::vector<page*> pages = shuffled_pages(16, 2);
  void* first = iov::vmap(pages.data(), 16, iov::VM_MAP, iov::PAGE_KERNEL);
  ASSERT_NE(first, nullptr);
  iov::vunmap(first);
  for (int k = 0; k < 20000; k++) {
    void* again = iov::vmap(pages.data(), 16, iov::VM_MAP, iov::PAGE_KERNEL);
    ASSERT_EQ(again, first) << "round " << k;
    iov::vunmap(again);
  }
  put_all(pages);
}

TEST(Vfree, PutsThePagesOfVmMapPutPages) {
  size_t start = in_use();
  {
    std::vector<page*> pages = shuffled_pages(64, 3);
    auto** owned = static_cast<page**>(std::malloc(64 * sizeof(page*)));  // the area's, as kvmalloc's
    std::copy(pages.begin(), pages.end(), owned);
    void* mapped = iov::vmap(owned, 64, iov::VM_MAP | iov::VM_MAP_PUT_PAGES, iov::PAGE_KERNEL);
    ASSERT_NE(mapped, nullptr);
    EXPECT_EQ(in_use(), start + 64);
    iov::vfree(mapped);
  }
  EXPECT_EQ(in_use(), start);
}

TEST(Vfree, LeavesThePagesOfAPlainVmap) {
  std::vector<page*> pages = shuffled_pages(4, 4);
  size_t before = in_use();
  void* mapped = iov::vmap(pages.data(), 4, iov::VM_MAP, iov::PAGE_KERNEL);
  ASSERT_NE(mapped, nullptr);
  iov::vfree(mapped);
  EXPECT_EQ(in_use(), before);
  for (page* p : pages) EXPECT_EQ(iov::page_ref_count(p), 1);
  put_all(pages);
}

TEST(Vmalloc, AllocatesMapsAndFrees) {
  size_t start = in_use();
  auto* z = static_cast<unsigned char*>(iov::vzalloc(5 * PAGE_SIZE + 3));
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(in_use(), start + 6);
  for (size_t i = 0; i < 6 * PAGE_SIZE; i++) ASSERT_EQ(z[i], 0) << "byte " << i;
  std::memset(z, 0xee, 6 * PAGE_SIZE);
  page* third = iov::vmalloc_to_page(z + 2 * PAGE_SIZE);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(static_cast<unsigned char*>(iov::page_address(third))[17], 0xee);
  iov::vfree(z);

  auto* v = static_cast<unsigned char*>(iov::vmalloc(1));
  ASSERT_NE(v, nullptr);
  v[0] = 1;
  iov::vfree(v);
  EXPECT_EQ(in_use(), start);
}

TEST(SharedPool, HandsOutZeroedFramesAndGivesThemBack) {
  iov::page_alloc_release_free();
  size_t start = in_use();
  std::vector<page*> pages;
  for (int k = 0; k < 600; k++) {  // more than a chunk's 512 frames
    page* p = iov::alloc_page(kVmappable | iov::__GFP_ZERO);
    ASSERT_NE(p, nullptr);
    auto* bytes = static_cast<unsigned char*>(iov::page_address(p));
    ASSERT_EQ(std::count(bytes, bytes + PAGE_SIZE, 0), static_cast<long>(PAGE_SIZE));
    std::memset(bytes, 0xff, PAGE_SIZE);
    pages.push_back(p);
  }
  EXPECT_EQ(in_use(), start + 600);
  put_all(pages);
  EXPECT_EQ(in_use(), start);
  EXPECT_GT(iov::page_alloc_release_free(), 0u);
  // Frames given back and handed out again read as zeroes, written or not.
  page* p = iov::alloc_page(kVmappable | iov::__GFP_ZERO);
  ASSERT_NE(p, nullptr);
  auto* bytes = static_cast<unsigned char*>(iov::page_address(p));
  EXPECT_EQ(std::count(bytes, bytes + PAGE_SIZE, 0), static_cast<long>(PAGE_SIZE));
  iov::__free_page(p);
}

// ---- Bad input (docs/bad-input.md) ----

TEST(VmapBadInput, PagesThatCannotBeMappedTwiceFail) {
  page* private_frame = iov::alloc_page(iov::GFP_KERNEL);
  page* shared_frame = iov::alloc_page(kVmappable);
  ASSERT_NE(private_frame, nullptr);
  ASSERT_NE(shared_frame, nullptr);
  alignas(PAGE_SIZE) static unsigned char user_memory[PAGE_SIZE];

  page* with_private[] = {shared_frame, private_frame};
  EXPECT_EQ(iov::vmap(with_private, 2, iov::VM_MAP, iov::PAGE_KERNEL), nullptr);
  page* with_user[] = {iov::virt_to_page(user_memory)};
  EXPECT_EQ(iov::vmap(with_user, 1, iov::VM_MAP, iov::PAGE_KERNEL), nullptr);
  page* with_null[] = {shared_frame, nullptr};
  EXPECT_EQ(iov::vmap(with_null, 2, iov::VM_MAP, iov::PAGE_KERNEL), nullptr);
  EXPECT_EQ(iov::vmap(with_null, 0, iov::VM_MAP, iov::PAGE_KERNEL), nullptr);
  // A failed vmap took nothing: the pages are whole and VM_MAP_PUT_PAGES put none.
  EXPECT_EQ(iov::vmap(with_private, 2, iov::VM_MAP | iov::VM_MAP_PUT_PAGES, iov::PAGE_KERNEL), nullptr);
  EXPECT_EQ(iov::page_ref_count(shared_frame), 1);
  EXPECT_EQ(iov::page_ref_count(private_frame), 1);
  iov::__free_page(private_frame);
  iov::__free_page(shared_frame);
}

TEST(VmapBadInput, NullAndZeroSizesAreNoOps) {
  EXPECT_EQ(iov::vmalloc(0), nullptr);
  EXPECT_EQ(iov::vzalloc(0), nullptr);
  iov::vunmap(nullptr);
  iov::vfree(nullptr);
}

TEST(VmapBadInput, UnmappingAnAddressVmapDidNotReturn) {
  page* p = iov::alloc_page(kVmappable);
  ASSERT_NE(p, nullptr);
  auto* mapped = static_cast<unsigned char*>(iov::vmap(&p, 1, iov::VM_MAP, iov::PAGE_KERNEL));
  ASSERT_NE(mapped, nullptr);
  EXPECT_BUG(iov::vunmap(mapped + PAGE_SIZE), "vunmap/vfree: not an address");
  EXPECT_BUG(iov::vfree(iov::page_address(p)), "vunmap/vfree: not an address");
  // Unchecked, nothing happened: the mapping still works.
  mapped[1] = 9;
  EXPECT_EQ(static_cast<unsigned char*>(iov::page_address(p))[1], 9);
  iov::vunmap(mapped);
  iov::__free_page(p);
}

TEST(VmapBadInput, ReadOnlyMappingRefusesWrites) {
  page* p = iov::alloc_page(kVmappable | iov::__GFP_ZERO);
  ASSERT_NE(p, nullptr);
  auto* mapped = static_cast<volatile unsigned char*>(iov::vmap(&p, 1, iov::VM_MAP, iov::PAGE_KERNEL_RO));
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(mapped[0], 0);
  EXPECT_DEATH(mapped[0] = 1, "");
  iov::vunmap(const_cast<unsigned char*>(mapped));
  iov::__free_page(p);
}

}  // namespace
