// highmem_test.cc: the highmem.h names that ports of older and newer drivers
// use beyond kmap_local_page() and the memcpy helpers (page_test.cc): kmap,
// kmap_atomic, clear_highpage, copy_highpage, zero_user_segment(s),
// flush_dcache_page, and the helpers taking void* as C callers pass it; the
// mappings' results used as C uses a void* (assigned to a char*, offset by
// bytes, unmapped from anywhere inside). Each against a flat copy of the page
// changed with plain loops.
//
//   ctest -R highmem_test
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;
using bytes = std::vector<unsigned char>;

class HighmemNames : public ::testing::Test {
 protected:
  void SetUp() override {
    auto data = iov_test::random_bytes(11, PAGE_SIZE);
    std::memcpy(run_.bytes(), data.data(), PAGE_SIZE);
    model_ = data;
  }
  bytes page_bytes() const { return bytes(run_.bytes(), run_.bytes() + PAGE_SIZE); }
  iov::page* pg() const { return run_.get(); }

  iov_test::PageRun run_{0};
  bytes model_;
};

TEST_F(HighmemNames, KmapAndKmapAtomicAreTheAddress) {
  void* a = iov::kmap(pg());
  EXPECT_EQ(a, iov::page_address(pg()));
  iov::kunmap(pg());
  void* b = iov::kmap_atomic(pg());
  EXPECT_EQ(b, iov::page_address(pg()));
  static_cast<char*>(b)[5] = 0x5a;  // mapped for writing
  iov::kunmap_atomic(b);
  iov::flush_dcache_page(pg());
  model_[5] = 0x5a;
  EXPECT_EQ(page_bytes(), model_);
}

TEST_F(HighmemNames, ClearHighpage) {
  iov::clear_highpage(pg());
  EXPECT_EQ(page_bytes(), bytes(PAGE_SIZE, 0));
}

TEST_F(HighmemNames, CopyHighpage) {
  iov_test::PageRun to(0);
  std::memset(to.bytes(), 0x77, PAGE_SIZE);
  iov::copy_highpage(to.get(), pg());
  EXPECT_EQ(bytes(to.bytes(), to.bytes() + PAGE_SIZE), model_);
}

TEST_F(HighmemNames, ZeroUserSegments) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<unsigned> pos(0, PAGE_SIZE);
  for (int trial = 0; trial < 200; trial++) {
    unsigned s1 = pos(rng), e1 = pos(rng), s2 = pos(rng), e2 = pos(rng);
    iov::zero_user_segments(pg(), s1, e1, s2, e2);
    for (unsigned k = s1; k < e1; k++) model_[k] = 0;  // an inverted range zeroes nothing
    for (unsigned k = s2; k < e2; k++) model_[k] = 0;
    ASSERT_EQ(page_bytes(), model_) << s1 << ' ' << e1 << ' ' << s2 << ' ' << e2;
    std::memset(run_.bytes() + trial % PAGE_SIZE, trial, 1);
    model_[trial % PAGE_SIZE] = static_cast<unsigned char>(trial);
  }
  iov::zero_user_segment(pg(), 100, 200);
  std::memset(model_.data() + 100, 0, 100);
  EXPECT_EQ(page_bytes(), model_);
  iov::zero_user_segment(pg(), 0, PAGE_SIZE);
  EXPECT_EQ(page_bytes(), bytes(PAGE_SIZE, 0));
}

TEST_F(HighmemNames, ZeroUserSegmentsPastThePageIsTheKernelsBug) {
#if IOV_CHECKS
  EXPECT_DEATH(iov::zero_user_segments(pg(), 0, 1, 0, PAGE_SIZE + 1), "zero_user_segments: end > PAGE_SIZE");
#else
  iov::zero_user_segments(pg(), 0, 10, 0, PAGE_SIZE + 1);  // changes nothing
  EXPECT_EQ(page_bytes(), model_);
#endif
}

// C converts void* implicitly: kernel callers pass void* buffers to the
// char* parameters of memcpy_to_page()/memcpy_from_page().
TEST_F(HighmemNames, MemcpyHelpersTakeVoidPointers) {
  bytes buf(300, 0x31);
  const void* from = buf.data();
  iov::memcpy_to_page(pg(), 1000, from, buf.size());
  std::memcpy(model_.data() + 1000, buf.data(), buf.size());
  EXPECT_EQ(page_bytes(), model_);
  bytes out(200);
  void* to = out.data();
  iov::memcpy_from_page(to, pg(), 3000, out.size());
  EXPECT_EQ(out, bytes(model_.begin() + 3000, model_.begin() + 3200));
}

// Kernel code assigns a mapping to a typed pointer, offsets it by bytes (GNU
// C's void* arithmetic) and unmaps any address inside it; none of it needs a
// cast here.
static_assert(std::is_convertible_v<decltype(iov::kmap_local_page(nullptr)), char*>);
static_assert(std::is_convertible_v<decltype(iov::kmap_local_page(nullptr)), void*>);
static_assert(std::is_convertible_v<decltype(iov::page_address(nullptr)), const unsigned char*>);
static_assert(!std::is_convertible_v<decltype(iov::kmap(nullptr)), unsigned long>, "only an explicit cast");

TEST_F(HighmemNames, KernelStyleMappingsNeedNoCasts) {
  bytes src = iov_test::random_bytes(12, 700);
  // memcpy(kmap_local_page(page) + off, src, len); kunmap_local(addr)
  iov::page* page = pg();
  char* p = iov::kmap_local_page(page);
  std::memcpy(iov::kmap_local_page(page) + 100, src.data(), 300);
  std::memcpy(model_.data() + 100, src.data(), 300);
  p[4000] = 0x11;
  model_[4000] = 0x11;
  iov::kunmap_local(p + 4000);  // any address inside the page, as the kernel's
  // The older names: kmap_atomic() into a char*, kmap() offset by an unsigned.
  unsigned char* q = iov::kmap_atomic(page);
  q[2] = 0x22;
  model_[2] = 0x22;
  iov::kunmap_atomic(q + 2);
  unsigned off = 2000;
  std::memcpy(iov::kmap(page) + off, src.data() + 300, 400);
  std::memcpy(model_.data() + off, src.data() + 300, 400);
  iov::kunmap(page);
  // page_address() as a char* and as bytes from the start.
  const char* base = iov::page_address(page);
  EXPECT_EQ(base, p);
  EXPECT_EQ(page_bytes(), model_);
  // the integer a kernel caller casts an address to
  EXPECT_EQ((unsigned long)iov::page_address(page) % PAGE_SIZE, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base), static_cast<uintptr_t>(iov::lowmem_page_address(page)));
}

TEST_F(HighmemNames, VoidPtrArithmeticIsByBytes) {
  iov::void_ptr v = iov::kmap_local_page(pg());
  const unsigned char* bytes0 = run_.bytes();
  EXPECT_EQ(v + 10, bytes0 + 10);
  EXPECT_EQ(10 + v, bytes0 + 10);
  EXPECT_EQ((v + 50) - 8, bytes0 + 42);
  EXPECT_EQ((v + 123) - v, 123);
  iov::void_ptr w = v;
  w += 7;
  ++w;
  EXPECT_EQ(w - v, 8);
  EXPECT_EQ(w++, bytes0 + 8);
  EXPECT_EQ(w, bytes0 + 9);
  w -= 4;
  --w;
  EXPECT_EQ(w--, bytes0 + 4);
  EXPECT_EQ(w, bytes0 + 3);
  size_t big = PAGE_SIZE - 1;
  EXPECT_EQ(*static_cast<unsigned char*>(v + big), model_[PAGE_SIZE - 1]);
}

// A folio's mapping at a byte offset reaches its later pages; the result is
// used as the kernel's callers use it.
TEST(HighmemFolio, KmapLocalFolioAndFolioAddressNeedNoCasts) {
  iov::folio* f = iov::folio_alloc(iov::GFP_KERNEL | iov::__GFP_ZERO, 1);
  ASSERT_NE(f, nullptr);
  char* addr = iov::kmap_local_folio(f, PAGE_SIZE + 10);
  addr[0] = 'x';
  iov::kunmap_local(addr);
  unsigned char* whole = iov::folio_address(f);
  EXPECT_EQ(whole[PAGE_SIZE + 10], 'x');
  std::memcpy(iov::kmap_local_folio(f, 0) + 20, "abc", 3);
  EXPECT_EQ(std::memcmp(whole + 20, "abc", 3), 0);
  iov::bio_vec bv;
  iov::bvec_set_folio(&bv, f, 100, 5);
  const char* v = iov::bvec_virt(&bv);
  EXPECT_EQ(v, reinterpret_cast<char*>(whole) + 5);
  char* k = iov::bvec_kmap_local(&bv);
  EXPECT_EQ(k + 15, reinterpret_cast<char*>(whole) + 20);
  iov::kunmap_local(k);
  iov::folio_put(f);
}

}  // namespace
