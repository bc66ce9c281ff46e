// vmalloc_concurrent_test.cc: vmap()/vunmap()/vmalloc()/vfree() from several
// threads at once (vmalloc.hpp), under ThreadSanitizer in the tsan preset:
// each thread maps its own pages, writes through the alias, checks every
// byte through the pages' own frames and every page through
// vmalloc_to_page() and kvec extraction, and unmaps, while the others take
// and give back areas of the same range and frames of the same pool.
//
//   ctest --preset tsan -R vmalloc_concurrent
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "iov/vmalloc.hpp"

namespace {

using iov::PAGE_SIZE;
using iov::page;

constexpr unsigned kThreads = 4, kRounds = 150;

unsigned char tag(unsigned thread, unsigned round, size_t i) {
  return static_cast<unsigned char>(thread * 67 + round * 13 + i + (i >> 12));
}

// One round: n pages, mapped, written through the alias, checked through
// the frames, vmalloc_to_page() and extraction; unmapped or freed.
void round_trip(unsigned thread, unsigned round) {
  unsigned n = 1 + (thread * 7 + round) % 24;
  auto** pages = static_cast<page**>(std::calloc(n, sizeof(page*)));
  ASSERT_NE(pages, nullptr);
  ASSERT_EQ(iov::alloc_pages_bulk(iov::GFP_KERNEL | iov::__GFP_VMAPPABLE, n, pages), n);
  bool put_pages = round % 2;
  auto* mapped = static_cast<unsigned char*>(
      iov::vmap(pages, n, iov::VM_MAP | (put_pages ? iov::VM_MAP_PUT_PAGES : 0), iov::PAGE_KERNEL));
  ASSERT_NE(mapped, nullptr);
  size_t bytes = n * PAGE_SIZE;
  for (size_t i = 0; i < bytes; i++) mapped[i] = tag(thread, round, i);
  for (size_t i = 0; i < bytes; i++)
    ASSERT_EQ(static_cast<unsigned char*>(iov::page_address(pages[i / PAGE_SIZE]))[i % PAGE_SIZE],
              tag(thread, round, i));

  iov::kvec kv{mapped + 100, bytes - 100};
  iov::iov_iter it;
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, &kv, 1, kv.iov_len);
  page* got[32];
  page** gotp = got;
  size_t off;
  ssize_t len = iov::iov_iter_extract_pages(&it, &gotp, bytes, 32, 0, &off);
  ASSERT_EQ(len, static_cast<ssize_t>(bytes - 100));
  EXPECT_EQ(off, 100u);
  for (unsigned k = 0; k < n; k++) {
    ASSERT_EQ(got[k], pages[k]);
    ASSERT_EQ(iov::vmalloc_to_page(mapped + k * PAGE_SIZE + 7), pages[k]);
  }

  if (put_pages) {
    iov::vfree(mapped);  // puts the pages, frees the array
    return;
  }
  iov::vunmap(mapped);
  iov::release_pages(pages, static_cast<int>(n));
  std::free(pages);
}

TEST(VmallocConcurrent, MapsWritesChecksAndUnmapsFromEveryThread) {
  iov::page_alloc_drain_thread_cache();
  size_t start = iov::page_alloc_read_stats().frames_in_use;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; t++)
    threads.emplace_back([t] {
      for (unsigned r = 0; r < kRounds && !::testing::Test::HasFatalFailure(); r++) {
        round_trip(t, r);
        if (r % 10 == 0) {
          void* v = iov::vzalloc((r + 1) * 1000);
          ASSERT_NE(v, nullptr);
          EXPECT_EQ(static_cast<unsigned char*>(v)[r * 1000], 0);
          iov::vfree(v);
        }
      }
      iov::page_alloc_drain_thread_cache();
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, start);
}

}  // namespace
