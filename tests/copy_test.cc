// copy_test.cc: copying between memory and an iterator, and zero-filling one
// (copy.hpp), inline and out of line, for every iterator type: data and counts
// against a flat model, the direction rules, the all-or-nothing *_full forms,
// and short user copies driven by fault injection.
//
//   ctest -R copy_test
//   ./copy_test --gtest_filter='Fault*'
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/internal/outofline.hpp"
#include "iov/internal/fault_inject.hpp"
#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;
using iov_test::Chunk;
using iov_test::Kind;
using iov_test::Layout;

using bytes = std::vector<unsigned char>;

// The copies, inline or through generic_iterate().
size_t copy_to(bool outofline, const void* src, size_t n, iov::iov_iter* it) {
  return outofline ? iov::internal::outofline::copy_to_iter(src, n, it) : iov::copy_to_iter(src, n, it);
}
size_t copy_from(bool outofline, void* dst, size_t n, iov::iov_iter* it) {
  return outofline ? iov::internal::outofline::copy_from_iter(dst, n, it) : iov::copy_from_iter(dst, n, it);
}
size_t zero(bool outofline, size_t n, iov::iov_iter* it) {
  return outofline ? iov::internal::outofline::iov_iter_zero(n, it) : iov::iov_iter_zero(n, it);
}

std::vector<size_t> sizes(size_t left) { return {0, 1, 100, PAGE_SIZE + 1, left / 2, left, left + 1, SIZE_MAX}; }

TEST(CopyToIter, FollowsTheModel) {
  for (const auto& l : iov_test::mixed_layouts(1, 4)) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    for (size_t pos : {size_t{0}, l->total() / 3})
      for (size_t n : sizes(l->total() - pos))
        for (bool out : {false, true}) {
          SCOPED_TRACE(testing::Message() << "pos " << pos << " bytes " << n << (out ? " outofline" : " inline"));
          l->fill(pos + n);
          bytes model = l->gather(), src = iov_test::random_bytes(7, l->total() + 1);
          iov::iov_iter it = l->iter(iov::ITER_DEST);
          iov::iov_iter_advance(&it, pos);
          size_t left = l->total() - pos, want = std::min(n, left);
          ASSERT_EQ(copy_to(out, src.data(), n, &it), want);
          if (l->kind() != Kind::discard) std::copy_n(src.begin(), want, model.begin() + pos);
          EXPECT_EQ(l->gather(), model);
          EXPECT_TRUE(l->guards_intact());
          iov_test::expect_at(*l, it, pos + want, left - want);
        }
  }
}

TEST(CopyFromIter, FollowsTheModel) {
  for (const auto& l : iov_test::mixed_layouts(2, 4)) {
    if (l->kind() == Kind::discard) continue;
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    for (size_t pos : {size_t{0}, l->total() / 3})
      for (size_t n : sizes(l->total() - pos))
        for (bool out : {false, true}) {
          SCOPED_TRACE(testing::Message() << "pos " << pos << " bytes " << n << (out ? " outofline" : " inline"));
          l->fill(pos + n);
          bytes model = l->gather();
          size_t left = l->total() - pos, want = std::min(n, left);
          bytes dst(l->total() + 1, 0xee), expect(l->total() + 1, 0xee);
          iov::iov_iter it = l->iter(iov::ITER_SOURCE);
          iov::iov_iter_advance(&it, pos);
          ASSERT_EQ(copy_from(out, dst.data(), n, &it), want);
          std::copy_n(model.begin() + pos, want, expect.begin());
          EXPECT_EQ(dst, expect);
          EXPECT_EQ(l->gather(), model) << "the source is not written";
          iov_test::expect_at(*l, it, pos + want, left - want);
        }
  }
}

TEST(IovIterZero, FollowsTheModelInEitherDirection) {
  for (const auto& l : iov_test::mixed_layouts(3, 4))
    for (unsigned dir : {iov::ITER_DEST, iov::ITER_SOURCE}) {
      if (l->kind() == Kind::discard && dir == iov::ITER_SOURCE) continue;
      for (size_t n : sizes(l->total()))
        for (bool out : {false, true}) {
          l->fill(n + 1);
          bytes model = l->gather();
          iov::iov_iter it = l->iter(dir);
          size_t want = std::min(n, l->total());
          ASSERT_EQ(zero(out, n, &it), want);
          if (l->kind() != Kind::discard) std::fill_n(model.begin(), want, 0);
          EXPECT_EQ(l->gather(), model);
          EXPECT_TRUE(l->guards_intact());
          iov_test::expect_at(*l, it, want, l->total() - want);
        }
    }
}

TEST(CopyFull, AllOrNothing) {
  for (const auto& l : iov_test::mixed_layouts(4, 4)) {
    if (l->kind() == Kind::discard) continue;
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    size_t pos = l->total() / 4, left = l->total() - pos;
    bytes src = iov_test::random_bytes(9, l->total() + 1), dst(l->total() + 1);
    l->fill(1);
    bytes model = l->gather();
    // Enough room: true, and everything moved.
    iov::iov_iter it = l->iter(iov::ITER_DEST);
    iov::iov_iter_advance(&it, pos);
    EXPECT_TRUE(iov::copy_to_iter_full(src.data(), left, &it));
    std::copy_n(src.begin(), left, model.begin() + pos);
    EXPECT_EQ(l->gather(), model);
    iov_test::expect_at(*l, it, l->total(), 0);
    it = l->iter(iov::ITER_SOURCE);
    iov::iov_iter_advance(&it, pos);
    EXPECT_TRUE(iov::copy_from_iter_full(dst.data(), left, &it));
    EXPECT_TRUE(std::equal(dst.begin(), dst.begin() + left, model.begin() + pos));
    // One byte too many: false, and the iterator back where it was.
    it = l->iter(iov::ITER_DEST);
    iov::iov_iter_advance(&it, pos);
    EXPECT_FALSE(iov::copy_to_iter_full(src.data(), left + 1, &it));
    iov_test::expect_at(*l, it, pos, left);
    it = l->iter(iov::ITER_SOURCE);
    iov::iov_iter_advance(&it, pos);
    EXPECT_FALSE(iov::copy_from_iter_full(dst.data(), left + 1, &it));
    iov_test::expect_at(*l, it, pos, left);
  }
}

// copy_page_{to,from}_iter run on into page + 1, page + 2 of one allocation.
TEST(CopyPage, AcrossTheFramesOfOneAllocation) {
  iov_test::PageRun frames_run(2);
  iov::page* pg = frames_run.get();
  unsigned char* frames = frames_run.bytes();
  const size_t run = frames_run.size();
  for (const auto& l : iov_test::mixed_layouts(5, 4)) {
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    for (size_t offset : {size_t{0}, size_t{100}, PAGE_SIZE - 1, PAGE_SIZE, PAGE_SIZE + 904, 3 * PAGE_SIZE})
      for (size_t n : {size_t{0}, size_t{10}, size_t{6000}, run - offset}) {
        if (offset + n > run) continue;  // the caller keeps within the allocation
        SCOPED_TRACE(testing::Message() << "offset " << offset << " bytes " << n);
        bytes page_model = iov_test::random_bytes(offset + n, run);
        std::memcpy(frames, page_model.data(), run);
        l->fill(offset);
        bytes model = l->gather();
        size_t want = std::min(n, l->total());
        iov::iov_iter it = l->iter(iov::ITER_DEST);
        ASSERT_EQ(iov::copy_page_to_iter(pg, offset, n, &it), want);
        if (l->kind() != Kind::discard) std::copy_n(page_model.begin() + offset, want, model.begin());
        EXPECT_EQ(l->gather(), model);
        EXPECT_EQ(0, std::memcmp(frames, page_model.data(), run)) << "the page is not written";
        iov_test::expect_at(*l, it, want, l->total() - want);
        if (l->kind() == Kind::discard) continue;

        l->fill(offset + 1);
        model = l->gather();
        it = l->iter(iov::ITER_SOURCE);
        ASSERT_EQ(iov::copy_page_from_iter(pg, offset, n, &it), want);
        std::copy_n(model.begin(), want, page_model.begin() + offset);
        EXPECT_EQ(0, std::memcmp(frames, page_model.data(), run));
        EXPECT_EQ(l->gather(), model);
        iov_test::expect_at(*l, it, want, l->total() - want);
      }
  }
}

// The kernel's WARN_ON_ONCE cases: nothing copied, nothing changed.
TEST(Direction, CopyIntoASourceOrOutOfADestDoesNothing) {
  iov_test::PageRun run(0);
  iov::page* pg = run.get();
  for (const auto& l : iov_test::mixed_layouts(6, 4)) {
    if (!l->total()) continue;
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    l->fill(3);
    bytes model = l->gather(), buf(l->total(), 0x77), buf_model = buf;
    if (l->kind() != Kind::discard) {
      iov::iov_iter it = l->iter(iov::ITER_SOURCE);
      iov_test::IterState before = iov_test::state_of(it);
      EXPECT_EQ(iov::copy_to_iter(buf.data(), buf.size(), &it), 0u);
      EXPECT_EQ(iov::internal::outofline::copy_to_iter(buf.data(), buf.size(), &it), 0u);
      EXPECT_FALSE(iov::copy_to_iter_full(buf.data(), buf.size(), &it));
      EXPECT_EQ(iov::copy_page_to_iter(pg, 0, PAGE_SIZE, &it), 0u);
      EXPECT_EQ(iov_test::state_of(it), before);
      EXPECT_EQ(l->gather(), model);
    }
    iov::iov_iter it = l->iter(iov::ITER_DEST);
    iov_test::IterState before = iov_test::state_of(it);
    EXPECT_EQ(iov::copy_from_iter(buf.data(), buf.size(), &it), 0u);
    EXPECT_EQ(iov::internal::outofline::copy_from_iter(buf.data(), buf.size(), &it), 0u);
    EXPECT_FALSE(iov::copy_from_iter_full(buf.data(), buf.size(), &it));
    std::memset(pg, 0x11, PAGE_SIZE);
    EXPECT_EQ(iov::copy_page_from_iter(pg, 0, PAGE_SIZE, &it), 0u);
    EXPECT_EQ(static_cast<unsigned char*>(iov::page_address(pg))[0], 0x11);
    EXPECT_EQ(iov_test::state_of(it), before);
    EXPECT_EQ(buf, buf_model);
    EXPECT_EQ(l->gather(), model);
  }
}

TEST(Direction, DiscardSinksCopiesAndHasNothingToRead) {
  iov::iov_iter it;
  iov::iov_iter_discard(&it, iov::ITER_DEST, 1000);  // ITER_SOURCE: uio_names_test Discard.*
  EXPECT_EQ(iov::iov_iter_rw(&it), static_cast<int>(iov::ITER_DEST));
  bytes buf(2000, 0x42), model = buf;
  EXPECT_EQ(iov::copy_to_iter(buf.data(), 300, &it), 300u);
  EXPECT_EQ(iov::internal::outofline::copy_to_iter(buf.data(), 300, &it), 300u);
  EXPECT_EQ(iov::copy_from_iter(buf.data(), 300, &it), 0u);
  EXPECT_EQ(it.count, 400u);
  EXPECT_FALSE(iov::copy_to_iter_full(buf.data(), 401, &it));
  EXPECT_EQ(it.count, 400u) << "reverted";
  EXPECT_TRUE(iov::copy_to_iter_full(buf.data(), 400, &it));
  EXPECT_EQ(it.count, 0u);
  EXPECT_EQ(buf, model);
}

// Fault injection: the user-backed copy steps stop once the armed budget is
// spent, as a copy_to_user() that hits an unmapped page.
#if IOV_FAULT_INJECTION
struct FaultGuard {
  explicit FaultGuard(size_t n) { iov::internal::usercopy_fault_after(n); }
  ~FaultGuard() { iov::internal::usercopy_fault_clear(); }
};

std::vector<size_t> budgets(const Layout& l) {
  std::vector<size_t> v = {0, 1, l.total() / 2, l.total() ? l.total() - 1 : 0};
  for (const Chunk& c : l.runs()) v.push_back(c.flat + c.len);  // segment ends
  return v;
}
#endif

TEST(Fault, ShortUserCopiesStopExactlyThere) {
#if !IOV_FAULT_INJECTION
  GTEST_SKIP() << "built without IOV_FAULT_INJECTION";
#else
  for (const auto& l : iov_test::mixed_layouts(7, 4)) {
    if (!iov_test::user_backed(l->kind()) || !l->total()) continue;
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    for (size_t budget : budgets(*l))
      for (bool out : {false, true}) {
        SCOPED_TRACE(testing::Message() << "budget " << budget << (out ? " outofline" : " inline"));
        size_t total = l->total(), want = std::min(budget, total);
        bytes src = iov_test::random_bytes(budget, total);
        l->fill(1);
        bytes model = l->gather();
        iov::iov_iter it = l->iter(iov::ITER_DEST);
        {
          FaultGuard fault(budget);
          ASSERT_EQ(copy_to(out, src.data(), total, &it), want);
        }
        std::copy_n(src.begin(), want, model.begin());
        EXPECT_EQ(l->gather(), model);
        iov_test::expect_at(*l, it, want, total - want);
        ASSERT_EQ(copy_to(out, src.data() + want, total, &it), total - want) << "the rest, once the fault clears";
        EXPECT_EQ(l->gather(), src);

        bytes dst(total, 0xee), expect(total, 0xee);
        it = l->iter(iov::ITER_SOURCE);
        {
          FaultGuard fault(budget);
          ASSERT_EQ(copy_from(out, dst.data(), total, &it), want);
        }
        std::copy_n(src.begin(), want, expect.begin());
        EXPECT_EQ(dst, expect);
        iov_test::expect_at(*l, it, want, total - want);

        l->fill(2);
        model = l->gather();
        it = l->iter(iov::ITER_DEST);
        {
          FaultGuard fault(budget);
          ASSERT_EQ(zero(out, total, &it), want);
        }
        std::fill_n(model.begin(), want, 0);
        EXPECT_EQ(l->gather(), model);
        iov_test::expect_at(*l, it, want, total - want);
      }
  }
#endif
}

TEST(Fault, FullFormsRevertAndFail) {
#if !IOV_FAULT_INJECTION
  GTEST_SKIP() << "built without IOV_FAULT_INJECTION";
#else
  for (const auto& l : iov_test::mixed_layouts(8, 4)) {
    if (!iov_test::user_backed(l->kind()) || l->total() < 2) continue;
    SCOPED_TRACE(iov_test::kind_name(l->kind()));
    size_t pos = 1, left = l->total() - 1;
    bytes buf = iov_test::random_bytes(3, l->total());
    for (size_t budget : {size_t{0}, size_t{1}, left / 2, left - 1}) {
      SCOPED_TRACE(testing::Message() << "budget " << budget);
      iov::iov_iter it = l->iter(iov::ITER_DEST);
      iov::iov_iter_advance(&it, pos);
      {
        FaultGuard fault(budget);
        EXPECT_FALSE(iov::copy_to_iter_full(buf.data(), left, &it));
      }
      iov_test::expect_at(*l, it, pos, left);
      it = l->iter(iov::ITER_SOURCE);
      iov::iov_iter_advance(&it, pos);
      {
        FaultGuard fault(budget);
        EXPECT_FALSE(iov::copy_from_iter_full(buf.data(), left, &it));
      }
      iov_test::expect_at(*l, it, pos, left);
    }
  }
#endif
}

TEST(Fault, CopyPageStopsAtTheFault) {
#if !IOV_FAULT_INJECTION
  GTEST_SKIP() << "built without IOV_FAULT_INJECTION";
#else
  iov_test::PageRun run(1);
  iov::page* pg = run.get();
  bytes page_model = iov_test::random_bytes(4, 2 * PAGE_SIZE);
  std::memcpy(pg, page_model.data(), 2 * PAGE_SIZE);
  auto l = Layout::make_iovec({{3000, 1}, {0, 0}, {5000, 2}});
  for (size_t budget : {size_t{0}, size_t{1}, size_t{3000}, size_t{4000}, size_t{7999}}) {
    SCOPED_TRACE(budget);
    l->fill(5);
    bytes model = l->gather();
    iov::iov_iter it = l->iter(iov::ITER_DEST);
    {
      FaultGuard fault(budget);
      ASSERT_EQ(iov::copy_page_to_iter(pg, 100, 8000, &it), budget);
    }
    std::copy_n(page_model.begin() + 100, budget, model.begin());
    EXPECT_EQ(l->gather(), model);
    iov_test::expect_at(*l, it, budget, 8000 - budget);
  }
#endif
}

TEST(Fault, KernelBackedCopiesNeverFault) {
#if !IOV_FAULT_INJECTION
  GTEST_SKIP() << "built without IOV_FAULT_INJECTION";
#else
  for (const auto& l : iov_test::edge_layouts()) {
    if (iov_test::user_backed(l->kind()) || l->kind() == Kind::discard) continue;
    bytes src = iov_test::random_bytes(6, l->total());
    iov::iov_iter it = l->iter(iov::ITER_DEST);
    FaultGuard fault(0);
    EXPECT_EQ(iov::copy_to_iter(src.data(), l->total(), &it), l->total());
    EXPECT_EQ(iov::internal::outofline::copy_to_iter(src.data(), 0, &it), 0u);
    EXPECT_EQ(l->gather(), src);
  }
#endif
}

}  // namespace
