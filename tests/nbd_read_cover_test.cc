// The test client's check of a structured READ reply's pieces (read_cover:
// inside the READ, no overlap, the whole READ covered), against a model that
// marks a bit a byte: random pieces, many overlapping or reaching past the
// READ, some at offsets near 2^64, each answer and the final coverage
// compared.
//
//   ctest -R nbd_read_cover
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "support/read_cover.hpp"

namespace iov_test::nbd {
namespace {

// A bit a byte of the READ [offset, offset + length).
struct cover_model {
  uint64_t offset;
  std::vector<bool> bits;

  bool cover(uint64_t o, uint64_t n) {
    const uint64_t length = bits.size();
    if (o < offset || o - offset > length || n > length - (o - offset))
      return false;
    for (uint64_t k = o - offset; k < o - offset + n; k++)
      if (bits[k])
        return false;
    for (uint64_t k = o - offset; k < o - offset + n; k++)
      bits[k] = true;
    return true;
  }
  bool whole() const {
    for (bool b : bits)
      if (!b)
        return false;
    return true;
  }
};

TEST(NbdReadCover, AgreesWithABitAByteModel) {
  std::mt19937_64 rng(0x5eadc0);
  for (int round = 0; round < 3000; round++) {
    const uint64_t length = rng() % 200;
    const uint64_t offset = round % 7 == 0 ? UINT64_MAX - length - rng() % 3 : rng() % 1000;
    read_cover c(offset, length);
    cover_model m{offset, std::vector<bool>(length)};
    const int pieces = static_cast<int>(rng() % 12);
    for (int p = 0; p < pieces; p++) {
      // Mostly inside the READ; some before it, past it, or of any length.
      uint64_t o = offset + rng() % (length + 8);
      if (rng() % 10 == 0)
        o = offset - 1 - rng() % 4;
      uint64_t n = rng() % 5 == 0 ? rng() : rng() % (length / 2 + 2);
      if (rng() % 3 == 0 && length > 0) {  // the rest of a gap: fills the READ
        const uint64_t k = rng() % length;
        uint64_t end = k;
        while (end < length && !m.bits[end]) end++;
        o = offset + k;
        n = end - k;
      }
      ASSERT_EQ(c.cover(o, n), m.cover(o, n)) << "round " << round << " piece " << p << ": [" << o << ", +" << n
                                              << ") of [" << offset << ", +" << length << ")";
    }
    ASSERT_EQ(c.whole(), m.whole()) << "round " << round;
  }
}

TEST(NbdReadCover, KnownLayouts) {
  read_cover a(100, 10);
  EXPECT_TRUE(a.cover(104, 6));
  EXPECT_FALSE(a.cover(103, 2)) << "overlaps the piece after it";
  EXPECT_FALSE(a.cover(99, 2)) << "starts before the READ";
  EXPECT_FALSE(a.cover(109, 2)) << "ends past the READ";
  EXPECT_FALSE(a.whole());
  EXPECT_TRUE(a.cover(100, 4));
  EXPECT_TRUE(a.whole());
  EXPECT_FALSE(a.cover(100, 1)) << "overlaps the piece before it";

  read_cover empty(5, 0);
  EXPECT_TRUE(empty.whole());
  EXPECT_TRUE(empty.cover(5, 0));
  EXPECT_FALSE(empty.cover(5, 1));

  read_cover top(UINT64_MAX - 4, 4);
  EXPECT_FALSE(top.cover(UINT64_MAX - 1, 4)) << "wraps past 2^64";
  EXPECT_TRUE(top.cover(UINT64_MAX - 4, 4));
  EXPECT_TRUE(top.whole());
}

}  // namespace
}  // namespace iov_test::nbd
