// crc32c_model.hpp: what the crc32c tests (crc32c_test.cc, crc32c_copy_test.cc)
// check crc32c.hpp against — a byte-table CRC built bit by bit here, never the
// library's — and the random iterator layouts they run it over.
//
//   auto rng = iov_test::crc32c_model::rng_for("my-test");
//   iov_test::crc32c_model::layout lay(iov_test::Kind::bvec, 5000, rng);
//   iov::iov_iter it;
//   lay.init(&it, iov::ITER_SOURCE);
//   std::vector<uint8_t> flat = lay.gather(0, 5000);   // then model_crc(c0, flat.data(), 5000)
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "iov/crc32c.hpp"
#include "iov/internal/crc32c_simd.hpp"
#include "iov/iov_iter.hpp"
#include "iov/xarray.hpp"
#include "support/model.hpp"
#include "support/simd_levels.hpp"

namespace iov_test::crc32c_model {

using u8 = uint8_t;

inline constexpr uint32_t kPoly = 0x82F63B78u;  // Castagnoli, reflected

// The raw update, no inversion: what the kernel's crc32c() computes.
uint32_t model_crc(uint32_t crc, const void* data, size_t len);

// crc over n zero bytes by bit-matrix powers (the method of zlib's old
// crc32_combine), independent of the library's polynomial multiply.
uint32_t model_zeroes(uint32_t crc, uint64_t n);

// A generator per test, so one test's draws do not depend on another's: the
// seed is IOV_TEST_SEED when set (printed once), mixed with the test's salt.
std::mt19937_64 rng_for(const char* salt);

void fill_random(std::mt19937_64& rng, void* p, size_t n);

// Runs fn at every level of the fused kernels the CPU has (the avx2 level in
// both its forms, 128- and 256-bit carry-less multiplies, where the CPU has
// both), then restores the level and form found.
template <class Fn>
void for_each_level(Fn fn) {
  const iov::internal::simd_level saved = iov::internal::crc32c_level();
  const bool saved_wide = iov::internal::crc32c_wide_clmul();
  for (iov::internal::simd_level l : kAllSimdLevels) {
    if (!iov::internal::crc32c_select(l)) continue;
    for (bool wide : {false, true}) {
      if (!iov::internal::crc32c_select_wide_clmul(wide) || (wide && l != iov::internal::simd_level::avx2)) continue;
      SCOPED_TRACE(std::string("simd level ") + iov::internal::simd_level_name(l) + (wide ? " (wide)" : ""));
      fn();
    }
  }
  ASSERT_TRUE(iov::internal::crc32c_select(saved));
  iov::internal::crc32c_select_wide_clmul(saved_wide);
}

// A random layout of `total` bytes of one iterator type. Every byte the
// iterator covers lives in one of `blocks` (each with slack around it), and
// `extents` lists the covered ranges in iterator order, so the model can read
// and write "byte k of the iterator" directly.
class layout {
 public:
  layout(Kind k, size_t total, std::mt19937_64& rng);
  ~layout() = default;
  layout(const layout&) = delete;
  layout& operator=(const layout&) = delete;

  void init(iov::iov_iter* it, unsigned dir) const;

  // Bytes [off, off + n) of the iterator, in order.
  std::vector<u8> gather(size_t off, size_t n) const;
  void scatter(size_t off, const u8* src, size_t n);
  // Every block's bytes, slack included: a snapshot to compare whole memory.
  std::vector<u8> snapshot() const;
  void restore(const std::vector<u8>& snap);

 private:
  struct block {
    u8* mem;
    size_t size;
    iov::page* pg = nullptr;
    int page_order = -1;
  };

  template <class Fn>
  void walk(size_t off, size_t n, Fn fn) const {
    for (auto [p, len] : extents_) {
      if (!n) break;
      if (off >= len) {
        off -= len;
        continue;
      }
      size_t part = std::min(len - off, n);
      fn(p + off, part);
      n -= part;
      off = 0;
    }
  }
  u8* heap_block(size_t size);
  u8* page_block(unsigned order);
  std::vector<size_t> split(std::mt19937_64& rng, size_t max_seg) const;
  void build_ubuf(std::mt19937_64& rng);
  void build_vec(std::mt19937_64& rng);
  void build_bvec(std::mt19937_64& rng);
  void build_bvecq(std::mt19937_64& rng);
  void build_folioq(std::mt19937_64& rng);
  void build_xarray(std::mt19937_64& rng);

  Kind kind_;
  size_t total_;
  iov_test::iter_builder b_;  // the segments, and the blocks' memory
  std::vector<block> blocks_;
  std::vector<std::pair<u8*, size_t>> extents_;
  std::unique_ptr<Layout> folioq_;  // FOLIOQ: the test model's (model.hpp)
};

void expect_same_position(const iov::iov_iter& a, const iov::iov_iter& b);

// One random call: a layout of `total` bytes, advanced by `skip`, asked for
// `bytes` (sometimes more than it holds), with CRC seed c0.
struct trial {
  Kind k;
  size_t total, skip, bytes;
  uint32_t c0;
};
trial draw(std::mt19937_64& rng, Kind k);

inline constexpr int kTrials = 60;

}  // namespace iov_test::crc32c_model
