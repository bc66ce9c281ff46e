// prefetch_test.cc: prefetch.hpp, the kernel's include/linux/prefetch.h.
// A prefetch has no effect a program can see, so what is checked is what
// can be: the addresses prefetch_range() asks for (every PREFETCH_STRIDE
// bytes from the start, none at or past the end, none for an empty range),
// against a model; and that every form runs on ranges ending at an
// inaccessible page, and on that page itself, leaving the memory as it was.
#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "iov/prefetch.hpp"

namespace {

using iov::PREFETCH_STRIDE;

static_assert(iov::L1_CACHE_BYTES == 64);
static_assert(PREFETCH_STRIDE == iov::L1_CACHE_BYTES);

std::vector<const char*> asked_for(const char* addr, size_t len) {
  std::vector<const char*> got;
  iov::internal::for_each_prefetch_stride(addr, len, [&](const char* p) { got.push_back(p); });
  return got;
}

TEST(Prefetch, RangeAsksForEveryStrideFromTheStartAndNothingAtOrPastTheEnd) {
  alignas(64) static char buf[3 * 4096];
  for (size_t start : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{100}}) {
    for (size_t len : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{127}, size_t{128},
                       size_t{1023}, size_t{1024}, size_t{1025}, size_t{4096}, size_t{4096 + 7}}) {
      const char* addr = buf + start;
      std::vector<const char*> want;  // the kernel's loop: cp = addr; cp < addr + len; cp += PREFETCH_STRIDE
      for (size_t off = 0; off < len; off += PREFETCH_STRIDE) want.push_back(addr + off);
      const std::vector<const char*> got = asked_for(addr, len);
      EXPECT_EQ(got, want) << "start " << start << " len " << len;
      EXPECT_EQ(got.size(), (len + PREFETCH_STRIDE - 1) / PREFETCH_STRIDE);
      for (const char* p : got) {
        EXPECT_GE(p, addr);
        EXPECT_LT(p, addr + len);
      }
    }
  }
}

TEST(Prefetch, EmptyRangeAsksForNothing) {
  EXPECT_TRUE(asked_for(nullptr, 0).empty());
  char c = 0;
  EXPECT_TRUE(asked_for(&c, 0).empty());
  iov::prefetch_range(nullptr, 0);
  iov::prefetchw_range(nullptr, 0);
}

TEST(Prefetch, AlignedRangeAsksForEachOfItsLinesOnce) {
  alignas(64) static char buf[1024];
  const std::vector<const char*> got = asked_for(buf, sizeof buf);
  ASSERT_EQ(got.size(), sizeof buf / iov::L1_CACHE_BYTES);
  for (size_t k = 0; k < got.size(); k++) EXPECT_EQ(got[k], buf + k * iov::L1_CACHE_BYTES);
}

// Prefetches never fault: every form, on ranges that end exactly at an
// inaccessible page and on that page, runs and changes nothing.
TEST(Prefetch, RunsUpToAndOnAnInaccessiblePageAndChangesNothing) {
  const size_t page = 4096;
  void* m = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  char* base = static_cast<char*>(m);
  char* guard = base + 2 * page;
  for (size_t k = 0; k < 2 * page; k++) base[k] = static_cast<char>(k * 7 + 1);
  ASSERT_EQ(mprotect(guard, page, PROT_NONE), 0);
  std::vector<char> model(base, base + 2 * page);

  for (size_t len : {size_t{1}, size_t{64}, size_t{100}, size_t{1024}, size_t{2 * page}}) {
    iov::prefetch_range(guard - len, len);
    iov::prefetchw_range(guard - len, len);
  }
  iov::prefetch(guard);
  iov::prefetchw(guard);
  iov::prefetch_range(guard, page);
  iov::prefetchw_range(guard, page);
  EXPECT_EQ(std::memcmp(base, model.data(), model.size()), 0);
  munmap(m, 3 * page);
}

}  // namespace
