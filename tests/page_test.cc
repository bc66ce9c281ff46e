// page_test.cc: pages as frames (page.hpp) and the segment helpers
// (bvec.hpp), checked against plain address arithmetic and a flat model
// of the page contents.
//
//   ctest -R page_test
//   ./page_test --gtest_filter='Highmem*'
#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;

using iov_test::addr_of;

TEST(PageConstants, MatchTheKernel) {
  EXPECT_EQ(iov::PAGE_SHIFT, 12u);
  EXPECT_EQ(iov::PAGE_SIZE, size_t{1} << iov::PAGE_SHIFT);
  EXPECT_EQ(iov::PAGE_SIZE, 4096u);
  EXPECT_EQ(iov::SECTOR_SHIFT, 9u);
  EXPECT_EQ(iov::SECTOR_SIZE, size_t{1} << iov::SECTOR_SHIFT);
  EXPECT_EQ(iov::SECTOR_SIZE, 512u);
  // gfp_types.h: ___GFP_ZERO_BIT 8, DIRECT_RECLAIM 10, KSWAPD_RECLAIM 11, COMP 18.
  EXPECT_EQ(iov::__GFP_ZERO, 0x100u);
  EXPECT_EQ(iov::__GFP_HIGHMEM, 0x2u);
  EXPECT_EQ(iov::__GFP_COMP, 0x40000u);
  EXPECT_EQ(iov::GFP_KERNEL, 0xcc0u);
  EXPECT_EQ(iov::GFP_NOIO, 0xc00u);
  EXPECT_EQ(iov::GFP_ATOMIC, 0x820u);
  EXPECT_EQ(iov::GFP_NOWAIT, 0x2800u);
  EXPECT_EQ(iov::GFP_HIGHUSER_MOVABLE & iov::__GFP_HIGHMEM, iov::__GFP_HIGHMEM);
  EXPECT_TRUE(iov::gfpflags_allow_blocking(iov::GFP_KERNEL));
  EXPECT_TRUE(iov::gfpflags_allow_blocking(iov::GFP_NOIO));
  EXPECT_FALSE(iov::gfpflags_allow_blocking(iov::GFP_NOWAIT));
  EXPECT_FALSE(iov::gfpflags_allow_blocking(iov::GFP_ATOMIC));
}

TEST(Page, IsItsFrame) {
  static_assert(sizeof(iov::page) == iov::PAGE_SIZE);
  static_assert(alignof(iov::page) == iov::PAGE_SIZE);
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 2);
  ASSERT_NE(p, nullptr);
  for (size_t n = 0; n < 4; n++) {
    EXPECT_EQ(addr_of(p + n), addr_of(p) + n * PAGE_SIZE);
    EXPECT_EQ(iov::nth_page(p, n), p + n);
  }
  iov::page* q = p;
  q++;
  EXPECT_EQ(addr_of(q), addr_of(p) + PAGE_SIZE);
  iov::free_pages(p, 2);
}

TEST(Page, AllocPageIsAlignedAndWholeFrameUsable) {
  iov::page* p = iov::alloc_page();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(addr_of(p) % PAGE_SIZE, 0u);
  // Every byte of the frame belongs to the allocation (ASan checks the range).
  std::memset(iov::page_address(p), 0x5a, PAGE_SIZE);
  EXPECT_EQ(static_cast<unsigned char*>(iov::page_address(p))[PAGE_SIZE - 1], 0x5a);
  iov::free_page(p);
  iov::page* g = iov::alloc_page(iov::GFP_NOIO);
  ASSERT_NE(g, nullptr);
  iov::free_page(g);
}

TEST(Page, AllocPagesIsContiguousForEveryOrder) {
  for (unsigned order = 0; order <= 5; order++) {
    SCOPED_TRACE(order);
    iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, order);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(addr_of(p) % PAGE_SIZE, 0u);
    size_t frames = size_t{1} << order;
    // Frame n is written through p + n and read back as bytes of one block.
    for (size_t n = 0; n < frames; n++) std::memset(iov::page_address(p + n), int(n + 1), PAGE_SIZE);
    auto* bytes = reinterpret_cast<unsigned char*>(p);
    for (size_t n = 0; n < frames; n++) {
      EXPECT_EQ(bytes[n * PAGE_SIZE], n + 1);
      EXPECT_EQ(bytes[n * PAGE_SIZE + PAGE_SIZE - 1], n + 1);
    }
    iov::free_pages(p, order);
  }
}

TEST(Page, VirtToPageAndOffsetOfArbitraryAddresses) {
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 2);
  auto* base = reinterpret_cast<char*>(p);
  for (size_t off : {size_t{0}, size_t{1}, PAGE_SIZE - 1, PAGE_SIZE, PAGE_SIZE + 1, 2 * PAGE_SIZE + 123,
                     4 * PAGE_SIZE - 1}) {
    SCOPED_TRACE(off);
    EXPECT_EQ(iov::virt_to_page(base + off), p + off / PAGE_SIZE);
    EXPECT_EQ(iov::offset_in_page(base + off), off % PAGE_SIZE);
    const void* cp = base + off;
    EXPECT_EQ(iov::virt_to_page(cp), p + off / PAGE_SIZE);
  }
  iov::free_pages(p, 2);

  // Any memory is made of frames: heap and stack addresses too.
  std::vector<char> heap(10000);
  int on_stack = 0;
  for (const void* a : {static_cast<const void*>(heap.data() + 4321), static_cast<const void*>(&on_stack)}) {
    EXPECT_EQ(addr_of(iov::virt_to_page(a)), addr_of(a) & ~uintptr_t{PAGE_SIZE - 1});
    EXPECT_EQ(iov::offset_in_page(a), addr_of(a) % PAGE_SIZE);
  }
}

TEST(Page, OffsetInPageOfIntegers) {
  EXPECT_EQ(iov::offset_in_page(size_t{0}), 0u);
  EXPECT_EQ(iov::offset_in_page(size_t{8193}), 1u);
  EXPECT_EQ(iov::offset_in_page(4095ul), 4095u);
  EXPECT_EQ(iov::offset_in_page(4096ul), 0u);
  EXPECT_EQ(iov::offset_in_page(loff_t{3} * 4096 + 77), 77u);
  EXPECT_EQ(iov::offset_in_page(unsigned{12345}), 12345u % 4096);
  EXPECT_EQ(iov::offset_in_page(uint64_t{1} << 40 | 99), 99u);
}

TEST(Page, AddressAndKmap) {
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 1);
  EXPECT_EQ(iov::page_address(p), static_cast<void*>(p));
  EXPECT_EQ(iov::page_address(p + 1), reinterpret_cast<char*>(p) + PAGE_SIZE);
  const iov::page* cp = p;
  EXPECT_EQ(iov::page_address(cp), static_cast<void*>(p));
  void* k = iov::kmap_local_page(p + 1);
  EXPECT_EQ(k, iov::page_address(p + 1));
  static_cast<char*>(k)[7] = 42;
  iov::kunmap_local(k);  // a no-op: the memory stays mapped
  EXPECT_EQ(reinterpret_cast<char*>(p)[PAGE_SIZE + 7], 42);
  iov::free_pages(p, 1);
}

// The highmem helpers against memcpy/memset on a flat copy of the page.
class Highmem : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = iov::alloc_page();
    b_ = iov::alloc_page();
    reset();
  }
  void TearDown() override {
    iov::free_page(a_);
    iov::free_page(b_);
  }
  void reset() {
    model_a_ = iov_test::random_bytes(1, PAGE_SIZE);
    model_b_ = iov_test::random_bytes(2, PAGE_SIZE);
    std::memcpy(a_, model_a_.data(), PAGE_SIZE);
    std::memcpy(b_, model_b_.data(), PAGE_SIZE);
  }
  void expect_models() {
    EXPECT_EQ(0, std::memcmp(a_, model_a_.data(), PAGE_SIZE));
    EXPECT_EQ(0, std::memcmp(b_, model_b_.data(), PAGE_SIZE));
  }
  // (offset, len) pairs with offset + len <= PAGE_SIZE, edges included.
  static std::vector<std::pair<size_t, size_t>> ranges() {
    return {{0, 0}, {0, 1}, {0, PAGE_SIZE}, {PAGE_SIZE, 0}, {PAGE_SIZE - 1, 1}, {1, PAGE_SIZE - 1},
            {100, 200}, {2048, 2048}, {4000, 96}, {511, 513}};
  }
  iov::page *a_, *b_;
  std::vector<unsigned char> model_a_, model_b_;
};

TEST_F(Highmem, MemcpyToPage) {
  std::vector<unsigned char> src = iov_test::random_bytes(3, PAGE_SIZE);
  for (auto [off, len] : ranges()) {
    SCOPED_TRACE(testing::Message() << off << "+" << len);
    reset();
    iov::memcpy_to_page(a_, off, reinterpret_cast<const char*>(src.data()), len);
    std::memcpy(model_a_.data() + off, src.data(), len);
    expect_models();
  }
}

TEST_F(Highmem, MemcpyFromPage) {
  for (auto [off, len] : ranges()) {
    SCOPED_TRACE(testing::Message() << off << "+" << len);
    reset();
    std::vector<char> to(PAGE_SIZE + 2, 'z'), want(PAGE_SIZE + 2, 'z');
    iov::memcpy_from_page(to.data() + 1, a_, off, len);
    std::memcpy(want.data() + 1, model_a_.data() + off, len);
    EXPECT_EQ(to, want);
    expect_models();
  }
}

TEST_F(Highmem, MemcpyPage) {
  for (auto [doff, len] : ranges())
    for (size_t soff : {size_t{0}, PAGE_SIZE - len, (PAGE_SIZE - len) / 3}) {
      SCOPED_TRACE(testing::Message() << doff << "<-" << soff << "+" << len);
      reset();
      iov::memcpy_page(a_, doff, b_, soff, len);
      std::memcpy(model_a_.data() + doff, model_b_.data() + soff, len);
      expect_models();
    }
  // Within one page, overlapping ranges move as memmove would.
  reset();
  iov::memcpy_page(a_, 10, a_, 0, 100);
  std::memmove(model_a_.data() + 10, model_a_.data(), 100);
  expect_models();
}

TEST_F(Highmem, MemsetMemzeroZeroUser) {
  for (auto [off, len] : ranges()) {
    SCOPED_TRACE(testing::Message() << off << "+" << len);
    reset();
    iov::memset_page(a_, off, 0x3c, len);
    std::memset(model_a_.data() + off, 0x3c, len);
    expect_models();
    reset();
    iov::memzero_page(b_, off, len);
    std::memset(model_b_.data() + off, 0, len);
    expect_models();
    reset();
    iov::zero_user(a_, static_cast<unsigned>(off), static_cast<unsigned>(len));
    std::memset(model_a_.data() + off, 0, len);
    expect_models();
  }
}

TEST(Segments, BvecSetPage) {
  iov::page* p = iov::alloc_pages(iov::GFP_KERNEL, 1);
  iov::bio_vec bv{nullptr, 1, 2};
  iov::bvec_set_page(&bv, p + 1, 300, 17);
  EXPECT_EQ(bv.bv_page, p + 1);
  EXPECT_EQ(bv.bv_len, 300u);
  EXPECT_EQ(bv.bv_offset, 17u);
  // bv_offset may run past the first frame of a multi-frame run.
  iov::bvec_set_page(&bv, p, 100, 5000);
  EXPECT_EQ(bv.bv_page, p);
  EXPECT_EQ(bv.bv_offset, 5000u);
  iov::free_pages(p, 1);
}

TEST(Segments, BvecSetVirt) {
  std::vector<char> buf(3 * PAGE_SIZE);
  char* v = buf.data() + 1234;
  iov::bio_vec bv;
  iov::bvec_set_virt(&bv, v, 5000);
  EXPECT_EQ(addr_of(iov::page_address(bv.bv_page)) + bv.bv_offset, addr_of(v));
  EXPECT_LT(bv.bv_offset, PAGE_SIZE);
  EXPECT_EQ(bv.bv_len, 5000u);
}

TEST(Segments, KvecHasIovecLayout) {
  static_assert(sizeof(iov::kvec) == sizeof(::iovec));
  static_assert(offsetof(iov::kvec, iov_base) == offsetof(::iovec, iov_base));
  static_assert(offsetof(iov::kvec, iov_len) == offsetof(::iovec, iov_len));
  // And at run time: a kvec array's bytes, read as iovecs, name the same
  // buffers, and writev() through them gathers what they hold.
  char a[] = "kvec ", b[] = "as iovec";
  iov::kvec kv[2] = {{a, 5}, {b, 8}};
  ::iovec as_iov[2];
  std::memcpy(as_iov, kv, sizeof kv);
  for (int k = 0; k < 2; k++) {
    EXPECT_EQ(as_iov[k].iov_base, kv[k].iov_base);
    EXPECT_EQ(as_iov[k].iov_len, kv[k].iov_len);
  }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_EQ(::writev(fds[1], as_iov, 2), 13);
  char got[14] = {};
  EXPECT_EQ(::read(fds[0], got, 13), 13);
  EXPECT_STREQ(got, "kvec as iovec");
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
