// Tests of iov-nbd's WRITE path (src/tools/nbd/transmission.cc,
// write_payload.hpp, page_payload.hpp) with several connections at once, run
// in this process so that ThreadSanitizer sees the server's threads: WRITEs
// of whole pages from several connections on several event loops, racing
// each other and a reader, are seen page by page whole, old or new, never
// mixed.
//
//   ctest --preset tsan -R nbd_write_concurrent
//   IOV_TEST_EXHAUSTIVE=1 ctest --preset tsan -R nbd_write_concurrent   # 3000 writes each, as in release
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/exhaustive.hpp"
#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

constexpr uint64_t kPage = 4 * KiB;

// Every page of a write carries one byte value, different for each write; so
// a page read with two values was torn.
bool page_torn(const bytes& d, size_t page, unsigned char* value) {
  const auto first = d.begin() + static_cast<ptrdiff_t>(page * kPage);
  *value = *first;
  return std::any_of(first, first + static_cast<ptrdiff_t>(kPage), [v = *value](unsigned char c) { return c != v; });
}

TEST(NbdWriteConcurrent, WholePagesAreSeenOldOrNewNeverMixed) {
  constexpr uint64_t kRegionPages = 48;
  iov::nbd::server_limits limits;
  limits.threads = 4;  // the writers land on different event loops
  local_server s("brd", {}, 1 * MiB, limits);
  // Under a sanitizer (TSan makes a write ~30x slower) a sample of the
  // writes: each size, on each loop, racing the reader, a few hundred times.
  constexpr int kWriters = 3;
  const int kWritesPerWriter = kSanitized && !exhaustive() ? 400 : 3000;
  std::atomic<bool> writing{true};
  std::atomic<int> torn{0}, reads{0};
  std::thread reader([&] {
    auto c = s.open(true);
    ASSERT_TRUE(c);
    while (writing.load()) {
      auto r = c->read(0, kRegionPages * kPage);
      ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
      reads++;
      for (size_t p = 0; p < kRegionPages; p++) {
        unsigned char v;
        if (page_torn(r.data, p, &v))
          torn++;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; t++) {
    writers.emplace_back([&, t] {
      auto c = s.open(t % 2 == 0);
      ASSERT_TRUE(c);
      std::mt19937_64 rng(40 + t);
      // Inline writes (up to 64 KiB) and large ones (received into pages).
      constexpr uint64_t kPagesPerWrite[] = {1, 4, 16, 32};
      for (int i = 0; i < kWritesPerWriter; i++) {
        const uint64_t n = kPagesPerWrite[rng() % 4], first = rng() % (kRegionPages - n + 1);
        bytes d(n * kPage);
        for (uint64_t p = 0; p < n; p++)
          std::fill_n(d.begin() + static_cast<ptrdiff_t>(p * kPage), kPage,
                      static_cast<unsigned char>(1 + (t * 85 + i * 7 + p) % 255));
        auto w = c->write(first * kPage, d);
        ASSERT_TRUE(w.ok && w.error == 0) << w.problem;
      }
    });
  }
  for (auto& th : writers)
    th.join();
  writing = false;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(torn.load(), 0) << "pages read with bytes of two writes, in " << reads.load() << " reads";
  auto c = s.open(false);
  ASSERT_TRUE(c);
  auto r = c->read(0, kRegionPages * kPage);
  ASSERT_TRUE(r.ok && r.error == 0);
  for (size_t p = 0; p < kRegionPages; p++) {
    unsigned char v;
    EXPECT_FALSE(page_torn(r.data, p, &v)) << "page " << p << " holds two writes' bytes";
  }
}

}  // namespace
}  // namespace iov_test::nbd
