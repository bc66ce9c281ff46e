// crc32c_state_test.cc: the streaming form of crc32c.hpp (crc32c_init,
// crc32c_update, crc32c_update_zeroes, crc32c_final, crc32c_stream) and the
// fused copy under the iterator forms (crc32c_copy_update), against the
// model of support/crc32c_model.hpp: random buffers cut at random places —
// empty, 1-byte, short and long pieces at any alignment, runs of zeroes never
// read — at every SIMD level this CPU has.
//
//   build/release/tests/crc32c_state_test
//   IOV_TEST_SEED=12345 build/release/tests/crc32c_state_test   # a fresh seed instead of the fixed one
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <iov/crc32c.hpp>
#include <iov/internal/crc32c_simd.hpp>

#include "support/crc32c_model.hpp"

namespace iov_test::crc32c_model {
namespace {

// A piece length drawn from one of several shapes, so that every path of the
// engine meets every other: empty, single bytes, under a 16-byte lane, under
// the 256-byte window, a few windows, and sector- or page-sized.
size_t draw_piece(std::mt19937_64& rng, int shape, size_t left) {
  size_t n = 0;
  switch (shape) {
    case 0: n = rng() % 2; break;
    case 1: n = rng() % 16; break;
    case 2: n = rng() % 256; break;
    case 3: n = 256 + rng() % 768; break;
    case 4: n = size_t{512} << (rng() % 4); break;
    default: n = rng() % 3000; break;
  }
  return std::min(n, left);
}

// What one random feed did, as the model sees it: every byte in order, the
// bytes of a zero run included.
struct feed {
  std::vector<u8> bytes;
  void add(const u8* p, size_t n) { bytes.insert(bytes.end(), p, p + n); }
  void zeroes(size_t n) { bytes.insert(bytes.end(), n, u8{0}); }
};

// Feeds `src` to a state cut into random pieces, with zero runs and (when
// `copy`) fused copies among them, checking crc32c_final() against the model
// now and then along the way (it must leave the state as it was).
void check_random_feed(std::mt19937_64& rng, const std::vector<u8>& src, bool copy, int shape) {
  const uint32_t c0 = static_cast<uint32_t>(rng());
  iov::crc32c_state st;
  iov::crc32c_init(&st, c0);
  feed model;
  std::vector<u8> dst(src.size(), 0xa5);
  for (size_t off = 0; off < src.size();) {
    size_t n = draw_piece(rng, rng() % 8 == 0 ? 5 : shape, src.size() - off);
    if (copy && rng() % 2) {
      iov::internal::crc32c_copy_update(&st, dst.data() + off, src.data() + off, n);
      ASSERT_EQ(std::memcmp(dst.data() + off, src.data() + off, n), 0) << "copy of " << n << " at " << off;
    } else {
      iov::crc32c_update(&st, src.data() + off, n);
    }
    model.add(src.data() + off, n);
    off += n;
    if (rng() % 16 == 0) {
      size_t z = rng() % 4 == 0 ? rng() % 5000 : rng() % 300;
      iov::crc32c_update_zeroes(&st, z);
      model.zeroes(z);
    }
    if (rng() % 8 == 0) {
      ASSERT_EQ(iov::crc32c_final(&st), model_crc(c0, model.bytes.data(), model.bytes.size()))
          << "after " << model.bytes.size() << " bytes";
    }
  }
  ASSERT_EQ(iov::crc32c_final(&st), model_crc(c0, model.bytes.data(), model.bytes.size()))
      << model.bytes.size() << " bytes, shape " << shape;
}

TEST(Crc32cState, RandomCutsMatchModel) {
  auto rng = rng_for("state-cuts");
  std::vector<u8> src(70000);
  fill_random(rng, src.data(), src.size());
  for_each_level([&] {
    for (int shape = 0; shape < 6; shape++)
      for (int k = 0; k < 40; k++) {
        size_t len = k < 20 ? rng() % 2000 : rng() % 70000;
        size_t at = rng() % (src.size() - len + 1);
        std::vector<u8> part(src.begin() + static_cast<long>(at), src.begin() + static_cast<long>(at + len));
        ASSERT_NO_FATAL_FAILURE(check_random_feed(rng, part, false, shape));
        ASSERT_NO_FATAL_FAILURE(check_random_feed(rng, part, true, shape));
      }
  });
}

// One piece of every length to 1100 at every misalignment of the position in
// the stream (a tail of 0 to 300 bytes before it), and fed alone.
TEST(Crc32cState, EveryLengthAfterEveryTail) {
  auto rng = rng_for("state-lengths");
  std::vector<u8> src(2000);
  fill_random(rng, src.data(), src.size());
  for_each_level([&] {
    for (size_t lead : {size_t{0}, size_t{256}, size_t{512}})
      for (size_t tail = 0; tail <= 300; tail += (tail < 20 ? 1 : 37))
        for (size_t len = 0; len <= 1100; len += (len < 300 ? 1 : 61)) {
          uint32_t c0 = static_cast<uint32_t>(rng());
          iov::crc32c_state st;
          iov::crc32c_init(&st, c0);
          iov::crc32c_update(&st, src.data(), lead);  // a folded window first, or not
          iov::crc32c_update(&st, src.data() + lead, tail);
          iov::crc32c_update(&st, src.data() + lead + tail, len);
          ASSERT_EQ(iov::crc32c_final(&st), model_crc(c0, src.data(), lead + tail + len))
              << "lead " << lead << " tail " << tail << " len " << len;
        }
  });
}

// Many short pieces in a row grow the tail past the window; a long piece after
// them, a run of zeroes or the final reduction must still see them all.
TEST(Crc32cState, LongTails) {
  auto rng = rng_for("state-long-tail");
  std::vector<u8> src(40000);
  fill_random(rng, src.data(), src.size());
  for_each_level([&] {
    for (int k = 0; k < 60; k++) {
      uint32_t c0 = static_cast<uint32_t>(rng());
      iov::crc32c_state st;
      iov::crc32c_init(&st, c0);
      size_t off = 0, lead = k % 3 == 0 ? 0 : 256 * (1 + rng() % 4);
      iov::crc32c_update(&st, src.data(), lead);
      off = lead;
      for (size_t small = 1 + rng() % 900; small; small--, off += 3) iov::crc32c_update(&st, src.data() + off, 3);
      ASSERT_EQ(iov::crc32c_final(&st), model_crc(c0, src.data(), off)) << "tail of " << off - lead;
      size_t big = rng() % 3000;
      iov::crc32c_update(&st, src.data() + off, big);
      off += big;
      ASSERT_EQ(iov::crc32c_final(&st), model_crc(c0, src.data(), off));
    }
  });
}

// Zero runs of any size, huge ones included, after a folded window or not,
// against the model's bit-matrix powers (nothing is read or allocated).
TEST(Crc32cState, ZeroRuns) {
  auto rng = rng_for("state-zeroes");
  std::vector<u8> src(3000), zeros(3000);
  fill_random(rng, src.data(), src.size());
  for_each_level([&] {
    for (uint64_t z : {uint64_t{0}, uint64_t{1}, uint64_t{255}, uint64_t{256}, uint64_t{1} << 33, uint64_t{SIZE_MAX},
                       rng()}) {
      for (size_t lead : {size_t{0}, size_t{5}, size_t{300}, size_t{1024}}) {
        uint32_t c0 = static_cast<uint32_t>(rng());
        iov::crc32c_state st;
        iov::crc32c_init(&st, c0);
        iov::crc32c_update(&st, src.data(), lead);
        iov::crc32c_update_zeroes(&st, z);
        uint32_t want = model_zeroes(model_crc(c0, src.data(), lead), z);
        ASSERT_EQ(iov::crc32c_final(&st), want) << "lead " << lead << " zeroes " << z;
        iov::crc32c_update(&st, src.data() + lead, 700);
        ASSERT_EQ(iov::crc32c_final(&st), model_crc(want, src.data() + lead, 700));
      }
    }
    // Small runs between pieces, each read back as zeroes by the model.
    for (int k = 0; k < 200; k++) {
      uint32_t c0 = static_cast<uint32_t>(rng());
      size_t a = rng() % 1000, z = rng() % 600, b = rng() % 1000;
      iov::crc32c_state st;
      iov::crc32c_init(&st, c0);
      iov::crc32c_update(&st, src.data(), a);
      iov::crc32c_update_zeroes(&st, z);
      iov::crc32c_update(&st, src.data() + a, b);
      uint32_t want = model_crc(model_crc(model_crc(c0, src.data(), a), zeros.data(), z), src.data() + a, b);
      ASSERT_EQ(iov::crc32c_final(&st), want) << a << " + " << z << " zeroes + " << b;
    }
  });
}

// A state is a value: a copy forks the CRC; the C++ wrapper is the same engine.
TEST(Crc32cState, CopiesForkAndStreamWraps) {
  auto rng = rng_for("state-fork");
  std::vector<u8> src(5000);
  fill_random(rng, src.data(), src.size());
  for_each_level([&] {
    iov::crc32c_state a;
    iov::crc32c_init(&a, ~0u);
    iov::crc32c_update(&a, src.data(), 1000);
    iov::crc32c_state b = a;
    iov::crc32c_update(&a, src.data() + 1000, 2000);
    iov::crc32c_update(&b, src.data() + 3000, 10);
    EXPECT_EQ(iov::crc32c_final(&a), model_crc(~0u, src.data(), 3000));
    std::vector<u8> forked(src.begin(), src.begin() + 1000);
    forked.insert(forked.end(), src.begin() + 3000, src.begin() + 3010);
    EXPECT_EQ(iov::crc32c_final(&b), model_crc(~0u, forked.data(), forked.size()));

    iov::crc32c_stream s(~0u);
    s.update("1234", 4).update_zeroes(0).update("56789", 5);
    EXPECT_EQ(~s.value(), 0xE3069283u);
  });
}

// The fused copy's step on its own: every short length at every source
// alignment (destinations spread too), then every length to 1100 and random
// ones to 20 KB; it writes exactly its bytes.
TEST(Crc32cState, CopyUpdateMatchesModel) {
  auto rng = rng_for("copy-kernel");
  std::vector<u8> src(20000 + 64), dst(20000 + 128);
  fill_random(rng, src.data(), src.size());
  for_each_level([&] {
    auto check = [&](size_t len, size_t sa, size_t da) {
      uint32_t c0 = static_cast<uint32_t>(rng());
      std::fill(dst.begin(), dst.end(), u8{0xa5});
      iov::crc32c_state st;
      iov::crc32c_init(&st, c0);
      iov::internal::crc32c_copy_update(&st, dst.data() + da, src.data() + sa, len);
      ASSERT_EQ(iov::crc32c_final(&st), model_crc(c0, src.data() + sa, len)) << len << " from " << sa << " to " << da;
      ASSERT_EQ(std::memcmp(dst.data() + da, src.data() + sa, len), 0) << len;
      auto untouched = [](auto from, auto to) { return std::all_of(from, to, [](u8 c) { return c == 0xa5; }); };
      ASSERT_TRUE(untouched(dst.begin(), dst.begin() + static_cast<long>(da)) &&
                  untouched(dst.begin() + static_cast<long>(da + len), dst.end()))
          << "bytes written outside the copy";
    };
    for (size_t len = 0; len <= 64; len++)
      for (size_t a = 0; a < 64; a++) ASSERT_NO_FATAL_FAILURE(check(len, a, (a * 37 + len) % 64));
    for (size_t len = 0; len <= 1100; len++) ASSERT_NO_FATAL_FAILURE(check(len, len % 64, (len * 7) % 64));
    for (int k = 0; k < 200; k++) ASSERT_NO_FATAL_FAILURE(check(rng() % 20001, rng() % 64, rng() % 64));
  });
}

// A state keeps the level it started at, whatever is installed meanwhile.
TEST(Crc32cState, KeepsItsLevel) {
  auto rng = rng_for("state-level");
  std::vector<u8> src(3000);
  fill_random(rng, src.data(), src.size());
  const iov::internal::simd_level saved = iov::internal::crc32c_level();
  for (auto first : kAllSimdLevels)
    for (auto then : kAllSimdLevels) {
      if (!iov::internal::crc32c_select(first)) continue;
      iov::crc32c_state st;
      iov::crc32c_init(&st, 7);
      iov::crc32c_update(&st, src.data(), 1000);
      if (!iov::internal::crc32c_select(then)) continue;
      iov::crc32c_update(&st, src.data() + 1000, 2000);
      EXPECT_EQ(iov::crc32c_final(&st), model_crc(7, src.data(), 3000))
          << iov::internal::simd_level_name(first) << " then " << iov::internal::simd_level_name(then);
    }
  ASSERT_TRUE(iov::internal::crc32c_select(saved));
}

}  // namespace
}  // namespace iov_test::crc32c_model
