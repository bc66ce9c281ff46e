// A differential test of the C++ layer's validated imports
// (iov::iter::import_iovec / import_ubuf, include/iov/cxx/iter.hpp) against
// the kernel layer's import_iovec() / import_ubuf(): on random arrays of
// hostile segments (kernel-half and top-of-user-space addresses, ranges that
// wrap, null bases, lengths past MAX_RW_COUNT or negative as ssize_t, about
// UIO_MAXIOV segments), in both directions, one refuses exactly what the
// other refuses, and what both accept is an iterator of the same type,
// direction and count over the same pieces. Addresses are never dereferenced.
#include <sys/uio.h>

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using ImportedPiece = std::pair<const std::byte*, size_t>;

std::vector<ImportedPiece> pieces_of(const iov::iov_iter& it) {
  std::vector<ImportedPiece> v;
  for (std::span<std::byte> p : iov::pieces(it))
    v.emplace_back(p.data(), p.size());
  return v;
}

// The top of the user half on x86-64 with 4-level paging (TASK_SIZE_MAX).
constexpr uintptr_t kUserTop = (uintptr_t{1} << 47) - iov::PAGE_SIZE;

::iovec hostile_segment(std::mt19937_64& rng, void* real) {
  uintptr_t base;
  switch (rng() % 6) {
    case 0: base = reinterpret_cast<uintptr_t>(real); break;
    case 1: base = 0; break;
    case 2: base = 0xffff880000000000; break;             // the kernel's half
    case 3: base = kUserTop - rng() % (3 * iov::PAGE_SIZE); break;  // around the top
    case 4: base = UINTPTR_MAX - rng() % 4096; break;     // wraps with most lengths
    default: base = rng() & ((uintptr_t{1} << 47) - 1); break;
  }
  size_t len;
  switch (rng() % 6) {
    case 0: len = 0; break;
    case 1: len = iov::MAX_RW_COUNT - rng() % 4096 + rng() % 8192; break;  // around the cap
    case 2: len = static_cast<size_t>(SSIZE_MAX) + 1 + rng() % 16; break;  // negative as ssize_t
    case 3: len = rng() % (4 * iov::PAGE_SIZE); break;
    default: len = rng() % 64; break;
  }
  return {reinterpret_cast<void*>(base), len};
}

TEST(IterImport, IovecMatchesTheKernelLayer) {
  static char real[64];
  for (uint64_t seed : iov_test::test_seeds({1, 2, 3, 4})) {
    std::mt19937_64 rng(seed);
    size_t refused = 0, accepted = 0, ubufs = 0;
    for (int round = 0; round < 3000; round++) {
      size_t nr = rng() % 16 == 0 ? UIO_MAXIOV - 2 + rng() % 5 : rng() % 6;
      // Mostly good segments, so that some arrays pass whole.
      bool tame = rng() % 2;
      std::vector<::iovec> segs(nr);
      for (::iovec& s : segs)
        s = tame && rng() % 8 ? ::iovec{real, rng() % sizeof real} : hostile_segment(rng, real);
      unsigned dir = rng() % 2 ? iov::ITER_SOURCE : iov::ITER_DEST;
      SCOPED_TRACE(testing::Message() << "seed " << seed << " round " << round << " nr " << nr << " dir " << dir);

      ::iovec fast[8];
      ::iovec* iov = fast;
      iov::iov_iter k;
      ssize_t ret = iov::import_iovec(static_cast<int>(dir), segs.data(), static_cast<unsigned>(nr), 8, &iov, &k);
      absl::StatusOr<iov::iter> got = iov::iter::import_iovec(static_cast<iov::iter_dir>(dir), segs);
      ASSERT_EQ(got.ok(), ret >= 0) << (got.ok() ? "accepted" : got.status().ToString()) << " kernel " << ret;
      if (ret < 0) {
        refused++;
        EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
        continue;
      }
      accepted++;
      ubufs += iov::iter_is_ubuf(&k);
      EXPECT_EQ(got->type(), iov::iov_iter_type(&k));
      EXPECT_EQ(got->rw(), iov::iov_iter_rw(&k));
      EXPECT_EQ(got->count(), static_cast<size_t>(ret));
      EXPECT_EQ(pieces_of(got->raw()), pieces_of(k));
      std::free(iov);
    }
    // The input reaches both verdicts and the one-segment case.
    EXPECT_GT(refused, 100u);
    EXPECT_GT(accepted, 100u);
    EXPECT_GT(ubufs, 50u);
  }
}

TEST(IterImport, UbufMatchesTheKernelLayer) {
  static char real[64];
  for (uint64_t seed : iov_test::test_seeds({1, 2, 3, 4})) {
    std::mt19937_64 rng(seed);
    size_t refused = 0, accepted = 0;
    for (int round = 0; round < 3000; round++) {
      ::iovec s = hostile_segment(rng, real);
      unsigned dir = rng() % 2 ? iov::ITER_SOURCE : iov::ITER_DEST;
      SCOPED_TRACE(testing::Message() << "seed " << seed << " round " << round << " base " << s.iov_base
                                      << " len " << s.iov_len << " dir " << dir);
      iov::iov_iter k;
      int ret = iov::import_ubuf(static_cast<int>(dir), s.iov_base, s.iov_len, &k);
      absl::StatusOr<iov::iter> got = iov::iter::import_ubuf(static_cast<iov::iter_dir>(dir), s.iov_base, s.iov_len);
      ASSERT_EQ(got.ok(), ret == 0) << (got.ok() ? "accepted" : got.status().ToString()) << " kernel " << ret;
      if (ret) {
        refused++;
        continue;
      }
      accepted++;
      EXPECT_EQ(got->type(), iov::ITER_UBUF);
      EXPECT_EQ(got->rw(), iov::iov_iter_rw(&k));
      EXPECT_EQ(got->count(), k.count);
      EXPECT_EQ(got->raw().ubuf, k.ubuf);
    }
    EXPECT_GT(refused, 100u);
    EXPECT_GT(accepted, 100u);
  }
}

}  // namespace
