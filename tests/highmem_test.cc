// highmem_test.cc: the highmem.h names that ports of older and newer drivers
// use beyond kmap_local_page() and the memcpy helpers (page_test.cc): kmap,
// kmap_atomic, clear_highpage, copy_highpage, zero_user_segment(s),
// flush_dcache_page, and the helpers taking void* as C callers pass it. Each
// against a flat copy of the page changed with plain loops.
//
//   ctest -R highmem_test
#include <cstring>
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

}  // namespace
