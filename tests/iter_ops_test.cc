// Tests of the operations of the C++ layer (include/iov/cxx/iter.hpp): CRC32C,
// fused copy+CRC both ways, zero scan and skip, non-temporal copies and page
// extraction give, on random layouts of every iterator type, the same count,
// CRC, bytes, pages and iterator state as the kernel-layer call they wrap.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov_test::Kind;
using iov_test::Layout;
using iov_test::state_of;

constexpr int kLayoutsPerKind = 12;

// Every kind, with random layouts; each test gets the same ones for a seed.
template <class Fn>
void for_random_layouts(Fn fn) {
  for (uint64_t seed : iov_test::test_seeds({1, 2, 3})) {
    std::mt19937_64 rng(seed);
    for (Kind kind : iov_test::kAllKinds)
      for (int n = 0; n < kLayoutsPerKind; n++) {
        std::unique_ptr<Layout> l = Layout::random(kind, rng);
        SCOPED_TRACE(std::string(iov_test::kind_name(kind)) + " seed " + std::to_string(seed) + " layout " +
                     std::to_string(n));
        // A length within, at or past the count, and 0.
        size_t total = l->total();
        size_t lens[] = {0, total ? rng() % total : 0, total, total + 1 + rng() % 100};
        l->fill(rng());
        fn(*l, lens, rng);
      }
  }
}

TEST(IterOps, Crc32cMatchesCrc32cIter) {
  for_random_layouts([](const Layout& l, const size_t(&lens)[4], std::mt19937_64& rng) {
    for (size_t len : lens) {
      iov::iov_iter k = l.iter(iov_test::source_or_dest(l.kind()));
      iov::iter c(k);
      uint32_t crc_k = static_cast<uint32_t>(rng()), crc_c = crc_k;
      EXPECT_EQ(c.crc32c(len, crc_c), iov::crc32c_iter(&k, len, &crc_k));
      EXPECT_EQ(crc_c, crc_k);
      EXPECT_EQ(state_of(c.raw()), state_of(k));
    }
  });
}

TEST(IterOps, Crc32cAndCopyFromMatchesKernel) {
  for_random_layouts([](const Layout& l, const size_t(&lens)[4], std::mt19937_64&) {
    for (size_t len : lens) {
      iov::iov_iter k = l.iter(iov_test::source_or_dest(l.kind()));
      iov::iter c(k);
      std::vector<unsigned char> out_k(len, 0xa5);
      std::vector<uint8_t> out_c(len, 0xa5);  // a vector<uint8_t> is bytes
      uint32_t crc_k = 7, crc_c = 7;
      EXPECT_EQ(c.crc32c_and_copy_from(out_c, crc_c), iov::crc32c_and_copy_from_iter(out_k.data(), len, &crc_k, &k));
      EXPECT_EQ(crc_c, crc_k);
      EXPECT_EQ(std::vector<unsigned char>(out_c.begin(), out_c.end()), out_k);
      EXPECT_EQ(state_of(c.raw()), state_of(k));
    }
  });
}

// Writes into the iterator: the kernel call on the layout, then the C++ one
// on the same memory filled again the same way; same bytes, count and state.
template <class Kernel, class Cxx>
void expect_same_write(const Layout& l, uint64_t seed, Kernel kernel, Cxx cxx) {
  const_cast<Layout&>(l).fill(seed);
  iov::iov_iter k = l.iter(iov::ITER_DEST);
  size_t n_k = kernel(k);
  std::vector<unsigned char> after_k = l.gather();
  const_cast<Layout&>(l).fill(seed);
  iov::iter c(l.iter(iov::ITER_DEST));
  EXPECT_EQ(cxx(c), n_k);
  EXPECT_EQ(l.gather(), after_k);
  EXPECT_EQ(state_of(c.raw()), state_of(k));
  EXPECT_TRUE(l.guards_intact());
}

TEST(IterOps, Crc32cAndCopyToMatchesKernel) {
  for_random_layouts([](const Layout& l, const size_t(&lens)[4], std::mt19937_64& rng) {
    for (size_t len : lens) {
      std::string src(len, '\0');  // a std::string is bytes too
      for (char& ch : src)
        ch = static_cast<char>(rng());
      uint32_t crc_k = 3, crc_c = 3;
      expect_same_write(
          l, rng(), [&](iov::iov_iter& k) { return iov::crc32c_and_copy_to_iter(src.data(), len, &crc_k, &k); },
          [&](iov::iter& c) { return c.crc32c_and_copy_to(src, crc_c); });
      EXPECT_EQ(crc_c, crc_k);
    }
  });
}

TEST(IterOps, CopyToAndFromTakeAnyByteRange) {
  for_random_layouts([](const Layout& l, const size_t(&lens)[4], std::mt19937_64& rng) {
    for (size_t len : lens) {
      std::vector<uint8_t> src(len);
      for (uint8_t& b : src)
        b = static_cast<uint8_t>(rng());
      expect_same_write(
          l, rng(), [&](iov::iov_iter& k) { return iov::copy_to_iter(src.data(), len, &k); },
          [&](iov::iter& c) { return c.copy_to(src); });
    }
  });
}

TEST(IterOps, CopyFromNocacheMatchesKernel) {
  for_random_layouts([](const Layout& l, const size_t(&lens)[4], std::mt19937_64&) {
    for (size_t len : lens) {
      iov::iov_iter k = l.iter(iov_test::source_or_dest(l.kind()));
      iov::iter c(k);
      std::vector<char> out_k(len, 'x'), out_c(len, 'x');
      EXPECT_EQ(c.copy_from_nocache(out_c), iov::copy_from_iter_nocache(out_k.data(), len, &k));
      EXPECT_EQ(out_c, out_k);
      EXPECT_EQ(state_of(c.raw()), state_of(k));

      iov::iov_iter k2 = l.iter(iov_test::source_or_dest(l.kind()));
      iov::iter c2(k2);
      EXPECT_EQ(c2.copy_from_full_nocache(out_c), iov::copy_from_iter_full_nocache(out_k.data(), len, &k2));
      EXPECT_EQ(out_c, out_k);
      EXPECT_EQ(state_of(c2.raw()), state_of(k2));
    }
  });
}

TEST(IterOps, ZeroScanAndSkipMatchKernel) {
  for_random_layouts([](const Layout& l, const size_t(&lens)[4], std::mt19937_64& rng) {
    // Leading zeroes of a random length, then random bytes (some zero).
    std::vector<unsigned char> flat = iov_test::random_bytes(rng(), l.total());
    size_t zeroes = l.total() ? rng() % (l.total() + 1) : 0;
    std::fill(flat.begin(), flat.begin() + static_cast<ptrdiff_t>(zeroes), 0);
    const_cast<Layout&>(l).scatter(flat);
    for (size_t len : {lens[0], lens[1], lens[2], lens[3], zeroes, zeroes + 1}) {
      iov::iov_iter k = l.iter(iov_test::source_or_dest(l.kind()));
      iov::iter c(k);
      EXPECT_EQ(c.is_zero(len), iov::iov_iter_is_zero(&k, len));
      EXPECT_EQ(c.skip_zeroes(len), iov::iov_iter_skip_zeroes(&k, len));
      EXPECT_EQ(state_of(c.raw()), state_of(k));
    }
  });
}

TEST(IterOps, ExtractPagesMatchesKernel) {
  for_random_layouts([](const Layout& l, const size_t(&lens)[4], std::mt19937_64& rng) {
    for (size_t len : lens) {
      unsigned maxpages = static_cast<unsigned>(1 + rng() % 4);
      iov::iov_iter k = l.iter(iov_test::source_or_dest(l.kind()));
      iov::iter c(k);
      std::vector<iov::page*> pages_k(maxpages), pages_c(maxpages);
      iov::page** array = pages_k.data();
      size_t off_k = 0;
      ssize_t n_k = iov::iov_iter_extract_pages(&k, &array, len, maxpages, 0, &off_k);
      absl::StatusOr<iov::iter::extracted> got = c.extract_pages(pages_c, len);
      if (n_k < 0) {
        ASSERT_FALSE(got.ok());
        EXPECT_EQ(got.status().code(), absl::ErrnoToStatusCode(static_cast<int>(-n_k)));
        EXPECT_EQ(l.kind(), Kind::discard);
      } else {
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_EQ(got->bytes, static_cast<size_t>(n_k));
        if (n_k > 0) {
          EXPECT_EQ(got->offset0, off_k);
          // The pages covered, and nothing past them, are handed back.
          size_t covered = (off_k + static_cast<size_t>(n_k) + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE;
          EXPECT_EQ(got->pages.size(), covered);
          EXPECT_EQ(got->pages.data(), pages_c.data());
        } else {
          EXPECT_TRUE(got->pages.empty());
        }
        EXPECT_EQ(pages_c, pages_k);
      }
      EXPECT_EQ(state_of(c.raw()), state_of(k));
    }
  });
}

}  // namespace
