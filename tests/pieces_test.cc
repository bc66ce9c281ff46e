// Tests of include/iov/cxx/pieces.hpp: the pieces of every iterator type, as the
// walk would hand them to a step, seen through std::ranges and range-v3.
#include "iov/cxx/pieces_range_v3.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <range/v3/algorithm/count_if.hpp>
#include <range/v3/numeric/accumulate.hpp>
#include <range/v3/view/transform.hpp>
#include <ranges>
#include <vector>

#include "iov/iov.hpp"

namespace {

static_assert(std::ranges::forward_range<iov::pieces_view>);
static_assert(std::ranges::view<iov::pieces_view>);
static_assert(ranges::forward_range<iov::pieces_view>);

using ViewedPiece = std::pair<const std::byte*, size_t>;

// The pieces a step sees, recorded through the walk itself (skipping the
// zero-length bvec pieces the walk may hand out, which the view leaves out).
std::vector<ViewedPiece> walked(iov::iov_iter it) {
  std::vector<ViewedPiece> out;
  auto step = [&out](void* base, size_t, size_t len, void*, void*) -> size_t {
    if (len)
      out.emplace_back(static_cast<const std::byte*>(base), len);
    return 0;
  };
  iov::iterate_and_advance(&it, it.count, nullptr, step, step);
  return out;
}

std::vector<ViewedPiece> viewed(const iov::iov_iter& it) {
  std::vector<ViewedPiece> out;
  for (std::span<std::byte> piece : iov::pieces(it))
    out.emplace_back(piece.data(), piece.size());
  return out;
}

TEST(Pieces, UbufIsOnePiece) {
  std::vector<std::byte> buf(5000);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, buf.data(), buf.size());
  iov::iov_iter_advance(&it, 10);
  EXPECT_THAT(viewed(it), ::testing::ElementsAre(ViewedPiece{buf.data() + 10, 4990}));
}

TEST(Pieces, IovecSkipsEmptySegmentsAndRespectsCount) {
  std::vector<std::byte> a(100), b(200);
  ::iovec v[] = {{nullptr, 0}, {a.data(), 100}, {nullptr, 0}, {b.data(), 200}};
  iov::iov_iter it;
  iov::iov_iter_init(&it, iov::ITER_SOURCE, v, 4, 250);
  EXPECT_THAT(viewed(it), ::testing::ElementsAre(ViewedPiece{a.data(), 100}, ViewedPiece{b.data(), 150}));
  EXPECT_EQ(viewed(it), walked(it));
}

TEST(Pieces, BvecPiecesNeverCrossAPage) {
  iov::page* p = iov::alloc_pages(0, 3);
  iov::bio_vec bv[] = {{p, 6000, 4000}, {p + 3, 0, 0}, {p + 3, 100, 4000}};
  iov::iov_iter it;
  iov::iov_iter_bvec(&it, iov::ITER_DEST, bv, 3, 6100);
  std::vector<ViewedPiece> got = viewed(it);
  const std::byte* base = reinterpret_cast<const std::byte*>(p);
  EXPECT_THAT(got, ::testing::ElementsAre(ViewedPiece{base + 4000, 96}, ViewedPiece{base + 4096, 4096},
                                          ViewedPiece{base + 8192, 1808}, ViewedPiece{base + 3 * 4096 + 4000, 96},
                                          ViewedPiece{base + 4 * 4096, 4}));
  EXPECT_EQ(got, walked(it));
  iov::free_pages(p, 3);
}

TEST(Pieces, XarrayEndsAtAMissingIndex) {
  iov::xarray xa;
  iov::page* p0 = iov::alloc_page();
  iov::page* p1 = iov::alloc_page();
  iov::xa_store(&xa, 10, p0);
  iov::xa_store(&xa, 11, p1);
  iov::iov_iter it;
  iov::iov_iter_xarray(&it, iov::ITER_SOURCE, &xa, 10 * 4096 + 100, 3 * 4096);
  const std::byte* b0 = reinterpret_cast<const std::byte*>(p0);
  const std::byte* b1 = reinterpret_cast<const std::byte*>(p1);
  EXPECT_THAT(viewed(it), ::testing::ElementsAre(ViewedPiece{b0 + 100, 3996}, ViewedPiece{b1, 4096}));
  EXPECT_EQ(viewed(it), walked(it));
  iov::xa_destroy(&xa);
  iov::free_page(p0);
  iov::free_page(p1);
}

TEST(Pieces, DiscardHasNoPieces) {
  iov::iov_iter it;
  iov::iov_iter_discard(&it, iov::ITER_DEST, 1000);
  EXPECT_TRUE(iov::pieces(it).empty());
}

TEST(Pieces, TheViewDoesNotMoveTheIterator) {
  std::vector<std::byte> buf(64);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, buf.data(), buf.size());
  (void)viewed(it);
  EXPECT_EQ(it.count, 64u);
  EXPECT_EQ(it.iov_offset, 0u);
}

TEST(Pieces, WorksWithStdRangesAndRangeV3) {
  std::vector<std::byte> a(100), b(300), c(7);
  iov::kvec kv[] = {{a.data(), 100}, {b.data(), 300}, {c.data(), 7}};
  iov::iov_iter it;
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, kv, 3, 407);

  // clang before 15 cannot check libstdc++ 12's transform_view over a lambda
  // (its concepts reject the view's own iterator): there the range is read
  // directly, and the GCC build checks the adaptor.
#if defined(__clang__) && __clang_major__ < 15
  std::vector<size_t> std_sizes;
  for (std::span<std::byte> s : iov::pieces(it)) {
    std_sizes.push_back(s.size());
  }
#else
  auto sizes = iov::pieces(it) | std::views::transform([](std::span<std::byte> s) { return s.size(); });
  std::vector<size_t> std_sizes(sizes.begin(), sizes.end());
#endif
  EXPECT_THAT(std_sizes, ::testing::ElementsAre(100u, 300u, 7u));
  EXPECT_EQ(std::ranges::count_if(iov::pieces(it), [](auto s) { return s.size() > 50; }), 2);

  auto v3 = iov::pieces(it) | ranges::views::transform([](std::span<std::byte> s) { return s.size(); });
  EXPECT_EQ(ranges::accumulate(v3, size_t{0}), 407u);
  EXPECT_EQ(ranges::count_if(iov::pieces(it), [](auto s) { return s.size() < 10; }), 1);
}

}  // namespace
