// Tests of iov-nbd's read-modify-write of partial blocks (block_locks.hpp,
// block_writer.hpp) with several connections at once, run in this process
// so that ThreadSanitizer sees the server's threads: clients that
// negotiated no block size write interleaved single bytes of the same block
// from four connections on four event loops; a lost update would leave a
// byte as it was before. Every byte is checked after, against what its
// writer wrote last.
//
//   ctest --preset tsan -R nbd_unaligned_concurrent
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

const driver_config kDrivers[] = {
    {"brd", "brd", {}},
    {"null_blk_4k", "null_blk", {{"blocksize", "4096"}}},
};

class NbdUnalignedConcurrent : public testing::TestWithParam<driver_config> {};

// Connection k writes the bytes i with i % 4 == k of blocks 0 and 1 (4 KiB
// each way: a brd page of 512-byte blocks, a null_blk block), one byte per
// WRITE, in two rounds of different values; with EXPORT_NAME (simple
// replies) or GO without block sizes (structured).
TEST_P(NbdUnalignedConcurrent, InterleavedSingleByteWritesToOneBlockAreAllKept) {
  constexpr int kWriters = 4, kRounds = 2;
  constexpr uint64_t kSpan = 8 * KiB;
  iov::nbd::server_limits limits;
  limits.threads = kWriters;  // the writers land on different event loops
  local_server s(GetParam(), 1 * MiB, limits);
  auto value = [](int round, uint64_t i) { return static_cast<unsigned char>(1 + (round * 131 + i * 7) % 251); };
  std::vector<std::thread> writers;
  for (int k = 0; k < kWriters; k++) {
    writers.emplace_back([&, k] {
      std::unique_ptr<client> c;
      if (k % 2 == 0) {
        c = s.connect();
        ASSERT_TRUE(c && c->greet() && c->opt_export_name("").ok);
      } else {
        c = s.open(true);
        ASSERT_TRUE(c);
      }
      for (int round = 0; round < kRounds; round++)
        for (uint64_t i = static_cast<uint64_t>(k); i < kSpan; i += kWriters) {
          auto w = c->write(i, bytes(1, value(round, i)));
          ASSERT_TRUE(w.ok && w.error == 0) << "byte " << i << ": " << w.problem << w.message;
        }
    });
  }
  for (auto& t : writers)
    t.join();
  auto c = s.open(false);
  ASSERT_TRUE(c);
  auto r = c->read(0, kSpan);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  int lost = 0;
  for (uint64_t i = 0; i < kSpan; i++)
    if (r.data[i] != value(kRounds - 1, i) && lost++ < 10)
      ADD_FAILURE() << "byte " << i << " reads " << int{r.data[i]} << ", its last write was "
                    << int{value(kRounds - 1, i)};
  EXPECT_EQ(lost, 0) << "updates lost";
}

INSTANTIATE_TEST_SUITE_P(Drivers, NbdUnalignedConcurrent, testing::ValuesIn(kDrivers), driver_config_name);

}  // namespace
}  // namespace iov_test::nbd
