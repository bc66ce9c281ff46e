// crc32c_window_test.cc: walks whose pieces are whole CRC windows (256
// bytes and its multiples: sectors, pages) among odd ones, the shape in which
// the avx512 level keeps its window in registers from piece to piece
// (crc32c_registers_walk, src/crc32c_fold_x86.cc) and leaves them for the state
// whenever a piece is not whole. crc32c_iter() and the fused copies, inline
// and out of line, at every SIMD level the CPU has, against the bitwise
// model; the copies must land where the model says and nowhere else.
//
//   build/release/tests/crc32c_window_test
//   IOV_TEST_SEED=12345 build/release/tests/crc32c_window_test   # a fresh seed
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <iov/crc32c.hpp>
#include <iov/internal/outofline.hpp>
#include <iov/iov_iter.hpp>
#include <iov/position.hpp>

#include "support/crc32c_model.hpp"
#include "support/model.hpp"

namespace iov_test::crc32c_model {
namespace {

// Segment lengths: mostly whole windows, now and then one that is not (which
// leaves a tail, or is shorter than a window), now and then an empty one.
std::vector<SegSpec> window_segments(std::mt19937_64& rng, size_t max_offset) {
  static constexpr size_t kWhole[] = {256, 512, 512, 768, 1024, 2048, 4096};
  static constexpr size_t kOdd[] = {0, 1, 3, 100, 255, 257, 511, 700};
  std::vector<SegSpec> segs;
  const size_t nr = 1 + rng() % 24;
  for (size_t k = 0; k < nr; k++) {
    const size_t len = rng() % 5 ? kWhole[rng() % std::size(kWhole)] : kOdd[rng() % std::size(kOdd)];
    segs.push_back({len, rng() % 2 ? 0 : rng() % (max_offset + 1)});
  }
  return segs;
}

std::unique_ptr<Layout> window_layout(Kind k, std::mt19937_64& rng) {
  switch (k) {
    case Kind::iovec: return Layout::make_iovec(window_segments(rng, 4095));
    case Kind::kvec: return Layout::make_kvec(window_segments(rng, 4095));
    case Kind::bvecq: return Layout::make_bvecq(window_segments(rng, 3 * 4096));
    case Kind::folioq: {
      std::vector<unsigned> orders(1 + rng() % 6);
      for (unsigned& o : orders) o = static_cast<unsigned>(rng() % 3);
      return Layout::make_folioq(orders, 0, rng() % 2 ? 0 : 256 * (rng() % 16) + (rng() % 4 ? 0 : rng() % 256));
    }
    case Kind::xarray: return Layout::make_xarray(static_cast<loff_t>(256 * (rng() % 32)), 256 * (1 + rng() % 64));
    default: return Layout::make_bvec(window_segments(rng, 3 * 4096));
  }
}

constexpr Kind kWindowKinds[] = {Kind::iovec, Kind::kvec, Kind::bvec, Kind::bvecq, Kind::folioq, Kind::xarray};

TEST(Crc32cWindow, CrcIterMatchesModel) {
  auto rng = rng_for("window-iter");
  for_each_level([&] {
    for (Kind k : kWindowKinds)
      for (int n = 0; n < 60; n++) {
        auto lay = window_layout(k, rng);
        lay->fill(rng());
        const size_t total = lay->total(), skip = rng() % 3 ? 0 : rng() % (total + 1);
        const size_t bytes = rng() % 4 ? total - skip : rng() % (total - skip + 1);
        SCOPED_TRACE(testing::Message() << kind_name(k) << " total " << total << " skip " << skip << " bytes "
                                        << bytes);
        iov::iov_iter a = lay->iter(iov::ITER_SOURCE), b;
        iov::iov_iter_advance(&a, skip);
        b = a;
        const uint32_t c0 = static_cast<uint32_t>(rng());
        uint32_t ca = c0, cb = c0;
        ASSERT_EQ(iov::crc32c_iter(&a, bytes, &ca), bytes);
        ASSERT_EQ(iov::internal::outofline::crc32c_iter(&b, bytes, &cb), bytes);
        const std::vector<unsigned char> flat = lay->gather();
        EXPECT_EQ(ca, model_crc(c0, flat.data() + skip, bytes));
        EXPECT_EQ(cb, ca);
        EXPECT_EQ(a.count, total - skip - bytes);
        expect_same_position(a, b);
      }
  });
}

// Both fused forms, each way: the iterator's memory or the flat buffer ends
// as the model's, and the CRC is that of the bytes moved.
TEST(Crc32cWindow, FusedCopiesMatchModel) {
  auto rng = rng_for("window-fused");
  for_each_level([&] {
    for (Kind k : kWindowKinds)
      for (int n = 0; n < 40; n++)
        for (bool to_iter : {true, false})
          for (bool outofline : {false, true}) {
            auto lay = window_layout(k, rng);
            lay->fill(rng());
            const size_t total = lay->total();
            SCOPED_TRACE(testing::Message() << kind_name(k) << (to_iter ? " to_iter" : " from_iter")
                                            << (outofline ? " out of line" : " inline") << " total " << total);
            std::vector<unsigned char> flat(total + 64);
            fill_random(rng, flat.data(), flat.size());
            const size_t at = rng() % 64;
            const std::vector<unsigned char> flat0 = flat, mem0 = lay->gather();
            iov::iov_iter it = lay->iter(to_iter ? iov::ITER_DEST : iov::ITER_SOURCE);
            uint32_t crc = 5;
            size_t got;
            if (to_iter)
              got = outofline ? iov::internal::outofline::crc32c_and_copy_to_iter(flat.data() + at, total, &crc, &it)
                              : iov::crc32c_and_copy_to_iter(flat.data() + at, total, &crc, &it);
            else
              got = outofline ? iov::internal::outofline::crc32c_and_copy_from_iter(flat.data() + at, total, &crc, &it)
                              : iov::crc32c_and_copy_from_iter(flat.data() + at, total, &crc, &it);
            ASSERT_EQ(got, total);
            EXPECT_EQ(it.count, 0u);
            const std::vector<unsigned char> moved =
                to_iter ? std::vector<unsigned char>(flat0.begin() + static_cast<long>(at),
                                                     flat0.begin() + static_cast<long>(at + total))
                        : mem0;
            EXPECT_EQ(crc, model_crc(5, moved.data(), total));
            if (to_iter) {
              EXPECT_TRUE(lay->gather() == moved) << "the iterator's memory differs from the source";
              EXPECT_TRUE(flat == flat0) << "the source was written";
            } else {
              std::vector<unsigned char> want = flat0;
              std::copy(moved.begin(), moved.end(), want.begin() + static_cast<long>(at));
              EXPECT_TRUE(flat == want) << "the flat buffer differs from the model";
              EXPECT_TRUE(lay->gather() == mem0) << "the source was written";
            }
            EXPECT_TRUE(lay->guards_intact());
          }
  });
}

}  // namespace
}  // namespace iov_test::crc32c_model
