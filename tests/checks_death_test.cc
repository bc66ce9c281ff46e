// checks_death_test.cc: the programming-error checks (config.hpp IOV_BUG_ON),
// in whichever mode this tree is built. With IOV_CHECKS on (debug and
// sanitizer presets) each broken rule aborts with "iov: BUG: <what>"; with it
// off the call does nothing and returns (a zero count), which the same tests
// check. make test runs both: the release stage (checks off) and the asan
// stage (checks on).
//
//   ctest --preset asan -R checks_death_test
//   ./checks_death_test --gtest_filter='ChecksDeathTest.Revert*'
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "iov/scatterlist.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;
using iov_test::Kind;
using iov_test::Layout;

// With checks on the statement must abort naming the rule; with them off it
// runs, and the test goes on to check that nothing changed.
#if IOV_CHECKS
#define EXPECT_BUG(statement, what) EXPECT_DEATH(statement, "iov: BUG: .*" what)
#else
#define EXPECT_BUG(statement, what) statement
#endif

// One small iterator of each segmented kind (and ubuf, and the queues), a
// zero-length segment among them, to step past the ends of.
std::vector<std::unique_ptr<Layout>> small_layouts() {
  std::vector<std::unique_ptr<Layout>> layouts;
  layouts.push_back(Layout::make_ubuf(100, 3));
  layouts.push_back(Layout::make_iovec({{10, 0}, {0, 0}, {20, 5}}));
  layouts.push_back(Layout::make_kvec({{10, 0}, {20, 5}}));
  layouts.push_back(Layout::make_bvec({{10, 5000}, {20, 0}}));
  layouts.push_back(Layout::make_xarray(100, 3 * PAGE_SIZE));
  layouts.push_back(Layout::make_bvecq({{10, 5000}, {0, 0}, {20, 0}}, {1, 0, 2}));
  layouts.push_back(Layout::make_folioq({0, 1}));
  return layouts;
}

class ChecksDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(ChecksDeathTest, RevertPastTheStart) {
  for (const auto& l : small_layouts()) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    for (size_t consumed : {size_t{0}, size_t{15}}) {
      iov::iov_iter it = l->iter(iov::ITER_DEST);
      iov::iov_iter_advance(&it, consumed);
      iov_test::IterState before = iov_test::state_of(it);
      EXPECT_BUG(iov::iov_iter_revert(&it, consumed + 1), "iov_iter_revert");
      EXPECT_EQ(iov_test::state_of(it), before) << "changes nothing";
    }
  }
}

TEST_F(ChecksDeathTest, ReexpandBeyondTheSegments) {
  for (const auto& l : small_layouts()) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    iov::iov_iter it = l->iter(iov::ITER_DEST);
    iov::iov_iter_advance(&it, 7);
    iov::iov_iter_truncate(&it, 3);
    iov_test::IterState before = iov_test::state_of(it);
    size_t capacity = l->total() - 7;
    EXPECT_BUG(iov::iov_iter_reexpand(&it, capacity + 1), "iov_iter_reexpand");
    EXPECT_EQ(iov_test::state_of(it), before) << "changes nothing";
    iov::iov_iter_reexpand(&it, capacity);  // exactly what the segments hold is fine
    EXPECT_EQ(it.count, capacity);
  }
}

TEST_F(ChecksDeathTest, PageHelpersBeyondThePage) {
  iov::page* a = iov::alloc_page();
  iov::page* b = iov::alloc_page();
  std::vector<unsigned char> pa = iov_test::random_bytes(1, PAGE_SIZE), pb = iov_test::random_bytes(2, PAGE_SIZE);
  std::memcpy(a, pa.data(), PAGE_SIZE);
  std::memcpy(b, pb.data(), PAGE_SIZE);
  std::vector<char> buf(2 * PAGE_SIZE, 'x'), buf_model = buf;
  // off + len one past the page, an offset past it, and a length that would wrap the sum.
  const std::pair<size_t, size_t> bad[] = {{4000, 97}, {0, PAGE_SIZE + 1}, {PAGE_SIZE + 1, 0}, {8, SIZE_MAX - 4}};
  for (auto [off, len] : bad) {
    SCOPED_TRACE(testing::Message() << off << "+" << len);
    EXPECT_BUG(iov::memcpy_to_page(a, off, buf.data(), len), "memcpy_to_page");
  }
  // Every helper, with the first bad range (each death costs a fork).
  auto [off, len] = bad[0];
  EXPECT_BUG(iov::memcpy_from_page(buf.data(), a, off, len), "memcpy_from_page");
  EXPECT_BUG(iov::memset_page(a, off, 0, len), "memset_page");
  EXPECT_BUG(iov::memzero_page(a, off, len), "memset_page");
  EXPECT_BUG(iov::memcpy_page(a, off, b, 0, len), "memcpy_page");
  EXPECT_BUG(iov::memcpy_page(a, 0, b, off, len), "memcpy_page");
  EXPECT_BUG(iov::zero_user(a, static_cast<unsigned>(off), static_cast<unsigned>(len)), "zero_user");
  EXPECT_BUG(iov::zero_user(a, PAGE_SIZE + 1, 0), "zero_user");
  EXPECT_EQ(0, std::memcmp(a, pa.data(), PAGE_SIZE)) << "changes nothing";
  EXPECT_EQ(0, std::memcmp(b, pb.data(), PAGE_SIZE));
  EXPECT_EQ(buf, buf_model);
  iov::free_page(a);
  iov::free_page(b);
}

TEST_F(ChecksDeathTest, InitializerWithABadDirection) {
  std::vector<char> buf(100);
  ::iovec iov[1] = {{buf.data(), 100}};
  iov::kvec kv[1] = {{buf.data(), 100}};
  iov::page* p = iov::alloc_page();
  iov::bio_vec bv[1] = {{p, 100, 0}};
  iov::xarray xa;
  iov::iov_iter it;
#if IOV_CHECKS
  const char* what = "direction must be ITER_DEST or ITER_SOURCE";
  EXPECT_DEATH(iov::iov_iter_ubuf(&it, 7, buf.data(), 100), what);
  EXPECT_DEATH(iov::iov_iter_init(&it, 7, iov, 1, 100), what);
  EXPECT_DEATH(iov::iov_iter_kvec(&it, 7, kv, 1, 100), what);
  EXPECT_DEATH(iov::iov_iter_bvec(&it, 7, bv, 1, 100), what);
  EXPECT_DEATH(iov::iov_iter_xarray(&it, 7, &xa, 0, 100), what);
  EXPECT_DEATH(iov::iov_iter_discard(&it, 7, 100), what);
#else
  // The initializers trust their caller, as the kernel's: the whole iterator is set.
  iov::iov_iter_ubuf(&it, 7, buf.data(), 100);
  EXPECT_TRUE(iov::iter_is_ubuf(&it));
  EXPECT_EQ(it.count, 100u);
  iov::iov_iter_init(&it, 7, iov, 1, 100);
  EXPECT_TRUE(iov::iter_is_iovec(&it));
  EXPECT_EQ(it.nr_segs, 1u);
  iov::iov_iter_kvec(&it, 7, kv, 1, 100);
  EXPECT_TRUE(iov::iov_iter_is_kvec(&it));
  iov::iov_iter_bvec(&it, 7, bv, 1, 100);
  EXPECT_TRUE(iov::iov_iter_is_bvec(&it));
  iov::iov_iter_xarray(&it, 7, &xa, 0, 100);
  EXPECT_TRUE(iov::iov_iter_is_xarray(&it));
  iov::iov_iter_discard(&it, 7, 100);
  EXPECT_TRUE(iov::iov_iter_is_discard(&it));
  EXPECT_EQ(iov::iov_iter_rw(&it), static_cast<int>(iov::ITER_DEST));
#endif
  iov::free_page(p);
}

TEST_F(ChecksDeathTest, InitializerCountBeyondTheSegments) {
  std::vector<char> buf(100);
  ::iovec iov[2] = {{buf.data(), 60}, {buf.data() + 60, 40}};
  iov::kvec kv[2] = {{buf.data(), 60}, {buf.data() + 60, 40}};
  iov::page* p = iov::alloc_page();
  iov::bio_vec bv[2] = {{p, 60, 0}, {p, 40, 60}};
  iov::iov_iter it;
#if IOV_CHECKS
  const char* what = "count exceeds the segments' total";
  EXPECT_DEATH(iov::iov_iter_init(&it, iov::ITER_DEST, iov, 2, 101), what);
  EXPECT_DEATH(iov::iov_iter_kvec(&it, iov::ITER_DEST, kv, 2, 101), what);
  EXPECT_DEATH(iov::iov_iter_bvec(&it, iov::ITER_DEST, bv, 2, 101), what);
  EXPECT_DEATH(iov::iov_iter_bvec(&it, iov::ITER_DEST, bv, 1, 61), what);
#else
  iov::iov_iter_bvec(&it, iov::ITER_DEST, bv, 2, 101);  // trusted, as the kernel's
  EXPECT_EQ(it.count, 101u);
  iov::iov_iter_init(&it, iov::ITER_DEST, iov, 2, 101);
  EXPECT_EQ(it.count, 101u);
  iov::iov_iter_kvec(&it, iov::ITER_DEST, kv, 2, 101);
  EXPECT_EQ(it.count, 101u);
#endif
  // The exact total and less are fine in either mode.
  iov::iov_iter_bvec(&it, iov::ITER_DEST, bv, 2, 100);
  EXPECT_EQ(it.count, 100u);
  iov::iov_iter_init(&it, iov::ITER_DEST, iov, 2, 99);
  EXPECT_EQ(it.count, 99u);
  iov::free_page(p);
}

TEST_F(ChecksDeathTest, TypedWalkOnAnotherType) {
  auto l = Layout::make_kvec({{100, 0}});
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov_test::IterState before = iov_test::state_of(it);
  size_t calls = 0;
  auto step = [&calls](void*, size_t, size_t, void*, void*) -> size_t {
    calls++;
    return 0;
  };
  size_t ret = 0;
  EXPECT_BUG(ret = iov::iterate_bvec(&it, 100, nullptr, nullptr, step), "iterate_bvec");
  EXPECT_BUG(ret = iov::iterate_ubuf(&it, 100, nullptr, nullptr, step), "iterate_ubuf");
  EXPECT_BUG(ret = iov::iterate_discard(&it, 100, nullptr, nullptr, step), "iterate_discard");
  EXPECT_EQ(ret, 0u);
  EXPECT_EQ(calls, 0u);
  EXPECT_EQ(iov_test::state_of(it), before);
}

// Where the kernel only warns, the call returns 0 and never aborts, in either mode.
// The v5 walk rule: a bvecq slot with a length must name a page. Unchecked,
// a copy and extract_iter_to_sg() stop before that slot.
TEST_F(ChecksDeathTest, BvecqSlotWithALengthAndNoPage) {
  iov::bvecq* bq = iov::bvecq_alloc_one(2, iov::GFP_KERNEL);
  ASSERT_NE(bq, nullptr);
  iov::page* pg = iov::alloc_page(iov::GFP_KERNEL | iov::__GFP_ZERO);
  ASSERT_NE(pg, nullptr);
  iov::bvec_set_page(&bq->bv[0], pg, 100, 0);
  bq->bv[1] = {nullptr, 50, 0};
  bq->nr_slots = 2;
  std::vector<unsigned char> src(150, 0x5a);
  iov::iov_iter it;
  iov::iov_iter_bvec_queue(&it, iov::ITER_DEST, bq, 0, 0, 150);
  EXPECT_BUG(
      {
        EXPECT_EQ(iov::copy_to_iter(src.data(), 150, &it), 100u);
        EXPECT_EQ(iov::iov_iter_count(&it), 50u);
      },
      "a slot with a length and no page");
  iov::iov_iter_bvec_queue(&it, iov::ITER_SOURCE, bq, 0, 0, 150);
  iov::scatterlist sgl[4];
  iov::sg_init_table(sgl, 4);
  iov::sg_table t = {sgl, 0, 0};
  EXPECT_BUG(
      {
        EXPECT_EQ(iov::extract_iter_to_sg(&it, 150, &t, 4, 0), 100);
        EXPECT_EQ(t.nents, 1u);
        EXPECT_EQ(iov::iov_iter_count(&it), 50u);
      },
      "a bvecq slot with a length and no page");
  iov::bvecq_put(bq);  // BVECQ_MEM_EXTERNAL: the segment goes, pg stays ours
  iov::__free_page(pg);
}

TEST_F(ChecksDeathTest, WarnCasesNeverAbort) {
  auto l = Layout::make_kvec({{100, 0}});
  std::vector<char> buf(100);
  iov::iov_iter src = l->iter(iov::ITER_SOURCE), dst = l->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::copy_to_iter(buf.data(), 100, &src), 0u);
  EXPECT_EQ(iov::copy_from_iter(buf.data(), 100, &dst), 0u);
  EXPECT_EQ(src.count, 100u);
  EXPECT_EQ(dst.count, 100u);
}

}  // namespace
