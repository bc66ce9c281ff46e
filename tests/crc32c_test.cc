// crc32c_test.cc: crc32c.hpp against a model — a byte-table CRC built bit by
// bit (support/crc32c_model.hpp), and zlib's bit-matrix powers for runs of
// zeroes — over flat memory and random layouts of every iterator type, inline
// and out of line, at every SIMD level this CPU has. The fused copy+CRC forms
// are in crc32c_copy_test.cc.
//
//   ctest --preset release -R crc32c_   # this file and the other crc32c_*_test.cc
//   IOV_TEST_SEED=12345 build/release/tests/crc32c_test   # a fresh seed instead of the fixed one
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <iov/crc32c.hpp>
#include <iov/internal/outofline.hpp>
#include <iov/internal/walk.hpp>
#include <iov/iov_iter.hpp>
#include <iov/position.hpp>

#include "support/crc32c_model.hpp"
#include "support/counted_walk.hpp"
#include "support/model.hpp"

// The cases live in the model's namespace, so its names (model_crc, layout,
// draw) and the test model's (Kind, kAllKinds) need no qualification.
namespace iov_test::crc32c_model {
namespace {

// ---- vectors and flat memory -----------------------------------------------------

// The check value, and RFC 3720's iSCSI vectors (standard: inverted in and out).
TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(~iov::crc32c(~0u, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(~model_crc(~0u, "123456789", 9), 0xE3069283u);
  u8 v[4][32];  // 0x00..., 0xff..., 0, 1, ..., 31 and 31, 30, ..., 0
  for (int k = 0; k < 32; k++) v[0][k] = 0, v[1][k] = 0xff, v[2][k] = static_cast<u8>(k), v[3][k] = static_cast<u8>(31 - k);
  const uint32_t want[4] = {0x8A9136AA, 0x62A8AB43, 0x46DD794E, 0x113FDB5C};
  for (int j = 0; j < 4; j++) {
    EXPECT_EQ(~iov::crc32c(~0u, v[j], 32), want[j]) << "vector " << j;
    EXPECT_EQ(~model_crc(~0u, v[j], 32), want[j]) << "vector " << j;  // the model agrees with the standard
  }
}

// Every length 0..64 at every alignment 0..63, then random lengths to 8 KiB.
TEST(Crc32c, MatchesModel) {
  auto rng = rng_for("flat");
  std::vector<u8> buf(8192 + 64);
  fill_random(rng, buf.data(), buf.size());
  auto check = [&](size_t len, size_t a) {
    uint32_t c0 = static_cast<uint32_t>(rng());
    ASSERT_EQ(iov::crc32c(c0, buf.data() + a, len), model_crc(c0, buf.data() + a, len)) << len << " at " << a;
  };
  for (size_t len = 0; len <= 64; len++)
    for (size_t a = 0; a < 64; a++) ASSERT_NO_FATAL_FAILURE(check(len, a));
  for (int k = 0; k < 2000; k++) ASSERT_NO_FATAL_FAILURE(check(rng() % 8193, rng() % 64));
}

// crc32_iscsi() takes an int: a length past INT_MAX must be fed in pieces.
// 2 GiB + 4 KiB of address space tiled with one 1 MiB memfd, so it costs no RAM.
TEST(Crc32c, LengthBeyondIntMax) {
  constexpr size_t kTile = size_t{1} << 20, kTiles = 2049;
  constexpr size_t kLen = (kTiles - 1) * kTile + 4096 + 13;  // > INT_MAX
  static_assert(kLen > size_t{INT_MAX});
  int fd = memfd_create("crc32c_test", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kTile), 0);
  void* tile = mmap(nullptr, kTile, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(tile, MAP_FAILED);
  auto rng = rng_for("int-max");
  fill_random(rng, tile, kTile);
  auto* base = static_cast<u8*>(mmap(nullptr, kTiles * kTile, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  for (size_t t = 0; t < kTiles; t++)
    ASSERT_NE(mmap(base + t * kTile, kTile, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0), MAP_FAILED);

  // Model: crc(c, tile) == zeroes(c, |tile|) ^ crc(0, tile), tile after tile.
  uint32_t c0 = static_cast<uint32_t>(rng()), want = c0;
  const uint32_t tile_crc = model_crc(0, tile, kTile);
  for (size_t t = 0; t + 1 < kTiles; t++) want = model_zeroes(want, kTile) ^ tile_crc;
  want = model_crc(want, tile, kLen - (kTiles - 1) * kTile);
  EXPECT_EQ(iov::crc32c(c0, base, kLen), want);

  munmap(base, kTiles * kTile);
  munmap(tile, kTile);
  close(fd);
}

// ---- combine and zero extension ---------------------------------------------------

TEST(Crc32c, ExtendZeroesMatchesDirect) {
  auto rng = rng_for("zeroes");
  std::vector<u8> zeros(size_t{1} << 20);
  for_each_level([&] {
    std::vector<size_t> lens = {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 63, 64, 4095, 4096, size_t{1} << 20};
    for (int k = 0; k < 40; k++) lens.push_back(rng() % ((size_t{1} << 20) + 1));
    for (size_t n : lens) {
      uint32_t c0 = static_cast<uint32_t>(rng());
      ASSERT_EQ(iov::crc32c_extend_zeroes(c0, n), model_crc(c0, zeros.data(), n)) << "n " << n;
    }
  });
}

TEST(Crc32c, ExtendZeroesHuge) {
  auto rng = rng_for("zeroes-huge");
  for_each_level([&] {
    std::vector<uint64_t> lens = {uint64_t{1} << 32, (uint64_t{1} << 40) + 7, SIZE_MAX, SIZE_MAX - 1,
                                  uint64_t{0xFFFFFFFF}};
    for (int k = 0; k < 40; k++) lens.push_back(rng());
    for (uint64_t n : lens) {
      uint32_t c0 = static_cast<uint32_t>(rng());
      ASSERT_EQ(iov::crc32c_extend_zeroes(c0, n), model_zeroes(c0, n)) << "n " << n;
    }
    EXPECT_EQ(iov::crc32c_extend_zeroes(0, SIZE_MAX), 0u);  // zero stays zero
  });
}

TEST(Crc32c, CombineMatchesDirect) {
  auto rng = rng_for("combine");
  std::vector<u8> buf(10000);
  fill_random(rng, buf.data(), buf.size());
  for_each_level([&] {
    for (int k = 0; k < 300; k++) {
      size_t la = rng() % 5000, lb = k < 10 ? static_cast<size_t>(k % 3) : rng() % 5000;
      uint32_t c0 = static_cast<uint32_t>(rng());
      uint32_t a = model_crc(c0, buf.data(), la), b = model_crc(0, buf.data() + la, lb);
      ASSERT_EQ(iov::crc32c_combine(a, b, lb), model_crc(c0, buf.data(), la + lb)) << la << "+" << lb;
    }
  });
}

TEST(Crc32cIter, MatchesModelInlineAndOutOfLine) {
  auto rng = rng_for("iter");
  for_each_level([&] {
    for (Kind k : kAllKinds)
      for (int n = 0; n < kTrials; n++) {
        trial t = draw(rng, k);
        unsigned dir = n % 2 ? iov::ITER_SOURCE : iov::ITER_DEST;  // read whatever the direction
        SCOPED_TRACE(testing::Message() << kind_name(k) << " total " << t.total << " skip " << t.skip << " bytes "
                                        << t.bytes << " dir " << dir);
        layout lay(k, t.total, rng);
        iov::iov_iter a, b;
        lay.init(&a, dir);
        iov::iov_iter_advance(&a, t.skip);
        b = a;
        uint32_t ca = t.c0, cb = t.c0;
        size_t na = iov::crc32c_iter(&a, t.bytes, &ca);
        size_t nb = iov::internal::outofline::crc32c_iter(&b, t.bytes, &cb);
        size_t want = k == Kind::discard ? 0 : std::min(t.bytes, t.total - t.skip);
        ASSERT_EQ(na, want);
        ASSERT_EQ(nb, want);
        std::vector<u8> bytes = lay.gather(t.skip, want);
        EXPECT_EQ(ca, model_crc(t.c0, bytes.data(), want));
        EXPECT_EQ(cb, ca);
        EXPECT_EQ(a.count, t.total - t.skip - want);
        expect_same_position(a, b);
      }
  });
}

TEST(Crc32cIter, ZeroBytesAndDiscard) {
  auto rng = rng_for("iter-zero");
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    layout lay(k, 5000, rng);
    for (int outofline = 0; outofline < 2; outofline++) {
      iov::iov_iter it, before;
      lay.init(&it, iov::ITER_SOURCE);
      before = it;
      // Zero bytes: nothing for any type; a discard iterator has no memory: nothing at all.
      for (size_t bytes : {size_t{0}, k == Kind::discard ? size_t{100} : size_t{0}}) {
        uint32_t crc = 0x1234;
        EXPECT_EQ(outofline ? iov::internal::outofline::crc32c_iter(&it, bytes, &crc) : iov::crc32c_iter(&it, bytes, &crc), 0u);
        EXPECT_EQ(crc, 0x1234u);
        expect_same_position(it, before);
      }
    }
  }
}

// The three iterator forms over one walk W, by their public names.
template <class W>
struct crc_forms {
  static size_t iter(iov::iov_iter* i, size_t n, uint32_t* crc) { return iov::internal::crc32c_iter<W>(i, n, crc); }
  static size_t to_iter(const void* a, size_t n, uint32_t* crc, iov::iov_iter* i) {
    return iov::internal::crc32c_and_copy_to_iter<W>(a, n, crc, i);
  }
  static size_t from_iter(void* a, size_t n, uint32_t* crc, iov::iov_iter* i) {
    return iov::internal::crc32c_and_copy_from_iter<W>(a, n, crc, i);
  }
};
struct public_forms {
  static size_t iter(iov::iov_iter* i, size_t n, uint32_t* crc) { return iov::crc32c_iter(i, n, crc); }
  static size_t to_iter(const void* a, size_t n, uint32_t* crc, iov::iov_iter* i) {
    return iov::crc32c_and_copy_to_iter(a, n, crc, i);
  }
  static size_t from_iter(void* a, size_t n, uint32_t* crc, iov::iov_iter* i) {
    return iov::crc32c_and_copy_from_iter(a, n, crc, i);
  }
};

// One form against the standard CRC-32C `want` of `v`, laid out as iterator
// type k: the CRC of the iterator, the copy out of it and the copy into it.
template <class Forms>
void check_vector(Kind k, const std::vector<u8>& v, uint32_t want, std::mt19937_64& rng) {
  const size_t len = v.size();
  const bool discard = k == Kind::discard;
  layout lay(k, len, rng);
  if (!discard) lay.scatter(0, v.data(), len);
  iov::iov_iter it;
  uint32_t crc = ~0u;
  lay.init(&it, iov::ITER_SOURCE);
  EXPECT_EQ(Forms::iter(&it, len, &crc), discard ? 0 : len);
  EXPECT_EQ(~crc, discard ? 0u : want) << "crc32c_iter";

  std::vector<u8> out(len);
  crc = ~0u;
  lay.init(&it, discard ? iov::ITER_DEST : iov::ITER_SOURCE);
  EXPECT_EQ(Forms::from_iter(out.data(), len, &crc, &it), discard ? 0 : len);
  EXPECT_EQ(~crc, discard ? 0u : want) << "crc32c_and_copy_from_iter";
  if (!discard) {
    EXPECT_EQ(out, v);
  }

  if (!discard) lay.scatter(0, std::vector<u8>(len, 0x5a).data(), len);
  crc = ~0u;
  lay.init(&it, iov::ITER_DEST);
  EXPECT_EQ(Forms::to_iter(v.data(), len, &crc, &it), len);
  EXPECT_EQ(~crc, want) << "crc32c_and_copy_to_iter";  // a discard iterator: the CRC of what it consumed
  if (!discard) {
    EXPECT_EQ(lay.gather(0, len), v);
  }
}

// Known CRC-32C values (the check value, RFC 3720's iSCSI vectors, and long
// buffers against the model) over every iterator type, at every level, through
// every walk: each walk form runs the same algorithm to the same result.
TEST(Crc32cIter, KnownVectorsEveryLevelAndWalk) {
  auto rng = rng_for("known-walks");
  std::vector<std::pair<std::vector<u8>, uint32_t>> vectors;
  const char* check = "123456789";
  vectors.emplace_back(std::vector<u8>(check, check + 9), 0xE3069283u);
  std::vector<u8> v[4] = {std::vector<u8>(32, 0), std::vector<u8>(32, 0xff), std::vector<u8>(32), std::vector<u8>(32)};
  for (int j = 0; j < 32; j++) v[2][j] = static_cast<u8>(j), v[3][j] = static_cast<u8>(31 - j);
  const uint32_t want[4] = {0x8A9136AA, 0x62A8AB43, 0x46DD794E, 0x113FDB5C};
  for (int j = 0; j < 4; j++) vectors.emplace_back(v[j], want[j]);
  // Long enough to fold whole windows across pieces (the layouts cut pages and segments).
  for (size_t len : {size_t{4096}, size_t{3 * 4096 + 700}}) {
    std::vector<u8> b(len);
    fill_random(rng, b.data(), len);
    vectors.emplace_back(b, ~model_crc(~0u, b.data(), len));
  }
  using iov::internal::inline_walk, iov::internal::ubuf_first_walk, iov::internal::outofline_walk,
      iov::internal::pointer_walk;
  using iov::internal::crc32c_registers_walk;
  counted_walk::calls = 0;
  for_each_level([&] {
    for (Kind k : kAllKinds)
      for (auto& [bytes, crc] : vectors) {
        SCOPED_TRACE(testing::Message() << kind_name(k) << " length " << bytes.size());
        check_vector<public_forms>(k, bytes, crc, rng);
        check_vector<crc_forms<inline_walk>>(k, bytes, crc, rng);
        check_vector<crc_forms<ubuf_first_walk>>(k, bytes, crc, rng);
        check_vector<crc_forms<outofline_walk>>(k, bytes, crc, rng);
        check_vector<crc_forms<pointer_walk>>(k, bytes, crc, rng);
        check_vector<crc_forms<counted_walk>>(k, bytes, crc, rng);
        check_vector<crc_forms<crc32c_registers_walk<inline_walk>>>(k, bytes, crc, rng);
        check_vector<crc_forms<crc32c_registers_walk<ubuf_first_walk>>>(k, bytes, crc, rng);
        check_vector<crc_forms<crc32c_registers_walk<outofline_walk>>>(k, bytes, crc, rng);
        check_vector<crc_forms<crc32c_registers_walk<pointer_walk>>>(k, bytes, crc, rng);  // none compiled: in memory
        check_vector<crc_forms<crc32c_registers_walk<counted_walk>>>(k, bytes, crc, rng);  // likewise
      }
  });
  EXPECT_GT(counted_walk::calls, 0u);  // the caller's walk was the one that ran
}

}  // namespace
}  // namespace iov_test::crc32c_model
