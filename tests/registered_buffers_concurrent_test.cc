// Concurrency of include/iov/registered_buffers.hpp: imports race with update
// and unregister; every import that succeeds reads one whole registered
// buffer's bytes (never a freed table), under TSan and ASan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "iov/iov.hpp"

namespace {

TEST(RegisteredBuffersConcurrent, ImportsRaceWithUpdateAndUnregister) {
  constexpr int kBuffers = 4;
  constexpr size_t kLen = 3 * 4096 + 123;
  std::vector<std::vector<char>> mem(kBuffers, std::vector<char>(kLen));
  for (int b = 0; b < kBuffers; b++)
    std::fill(mem[b].begin(), mem[b].end(), static_cast<char>('A' + b));
  iov::buffer_table table(2);
  std::atomic<bool> stop{false};
  std::atomic<long> imports{0};

  auto reader = [&] {
    std::vector<char> out(kLen);
    while (!stop.load(std::memory_order_relaxed)) {
      for (unsigned slot = 0; slot < 2; slot++) {
        for (int b = 0; b < kBuffers; b++) {
          iov::iov_iter it;
          auto ref = iov::import_fixed(table, slot, reinterpret_cast<uintptr_t>(mem[b].data()), kLen,
                                       iov::ITER_SOURCE, &it);
          if (!ref.ok())
            continue;
          ASSERT_EQ(iov::copy_from_iter(out.data(), kLen, &it), kLen);
          ASSERT_EQ(out, mem[b]);
          imports.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
  };
  auto writer = [&] {
    unsigned n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      unsigned slot = n % 2;
      int b = static_cast<int>(n % kBuffers);
      if (n % 5 == 0)
        (void)table.unregister(slot);
      else
        ASSERT_TRUE(table.update(slot, ::iovec{mem[b].data(), kLen}).ok());
      n++;
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(reader);
  threads.emplace_back(reader);
  threads.emplace_back(writer);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  stop = true;
  for (auto& t : threads)
    t.join();
  table.unregister_all();
  iov::rcu_barrier();
  EXPECT_GT(imports.load(), 0);
}

}  // namespace
