// simd_dispatch_concurrent_test.cc: the first use of each dispatched family
// (zero scan, non-temporal copy, CRC engine) from several threads at once —
// one choice is made, every thread's call is right, and under TSan no race —
// and a new choice made while other threads run the kernels.
#include <atomic>
#include <cstring>
#include <latch>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "iov/crc32c.hpp"
#include "iov/internal/crc32c_simd.hpp"
#include "iov/internal/memcpy_nt.hpp"
#include "iov/internal/simd_level.hpp"
#include "iov/internal/zero_scan_simd.hpp"
#include "iov/zero_scan.hpp"

namespace {

constexpr int kSimdThreads = 4;
constexpr size_t kSimdLen = 8192;

// One thread's calls into each family; false if one returned a wrong answer.
// The CRC is compared with crc32c() (ISA-L, not dispatched by iov) of the same bytes.
bool use_every_family(int seed) {
  std::vector<unsigned char> src(kSimdLen, 0), dst(kSimdLen + 64);
  bool ok = iov::mem_is_zero(src.data(), kSimdLen);
  src[kSimdLen - 1 - static_cast<size_t>(seed)] = 1;
  ok &= iov::memchr_inv(src.data(), 0, kSimdLen) == src.data() + kSimdLen - 1 - seed;
  for (size_t k = 0; k < kSimdLen; k++) src[k] = static_cast<unsigned char>(k * 7 + static_cast<size_t>(seed));
  iov::internal::memcpy_nt(dst.data() + 3, src.data(), kSimdLen);
  iov::internal::memcpy_nt_fence();
  ok &= std::memcmp(dst.data() + 3, src.data(), kSimdLen) == 0;
  iov::crc32c_state st;
  iov::crc32c_init(&st, ~0u);
  iov::crc32c_update(&st, src.data(), 1000);
  iov::crc32c_update(&st, src.data() + 1000, kSimdLen - 1000);
  ok &= iov::crc32c_final(&st) == iov::crc32c(~0u, src.data(), kSimdLen);
  return ok;
}

// Each ctest case is a process of its own, so the calls below are each
// family's first use (unless a static initializer of the program came first).
TEST(SimdDispatchConcurrent, FirstUseFromManyThreads) {
  std::latch start(kSimdThreads);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kSimdThreads; t++) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      if (!use_every_family(t)) wrong.fetch_add(1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(iov::internal::zero_scan_level(), iov::internal::zero_scan_choice().level);
  EXPECT_EQ(iov::internal::memcpy_nt_level(), iov::internal::memcpy_nt_choice().level);
  EXPECT_EQ(iov::internal::crc32c_level(), iov::internal::crc32c_choice().level);
}

// A choice made again while other threads call the kernels: each call runs
// some level's kernel whole and gets the right answer.
TEST(SimdDispatchConcurrent, ChooseWhileInUse) {
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> users;
  for (int t = 0; t < kSimdThreads - 1; t++) {
    users.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed))
        if (!use_every_family(t)) wrong.fetch_add(1);
    });
  }
  for (int round = 0; round < 20; round++) {
    iov::internal::zero_scan_choose();
    iov::internal::memcpy_nt_choose();
    iov::internal::crc32c_choose();
  }
  stop.store(true);
  for (auto& th : users) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
