// vmap_bench.cc: what vmap() support costs (vmalloc.hpp), each case against
// its baseline in the same run:
//   shared_pool_first_write   every page of a 256 MiB brd-style store
//                             allocated (GFP_NOIO | __GFP_ZERO |
//                             __GFP_VMAPPABLE) and written once, in random
//                             order, against the same with the default pool;
//                             counters: rss_per_byte_stored (the resident
//                             set's growth over the bytes stored) and
//                             huge_per_byte_stored (of it, on huge pages:
//                             AnonHugePages + ShmemPmdMapped)
//   shared_pool_randwrite     65536 random 4 KiB writes into that written
//                             store, against the default pool's
//   extract_kvec              iov_iter_extract_pages() over the kernel's
//                             kvec[8] of 256 MiB (non-vmalloc addresses), 16
//                             pages a call, against the same extraction
//                             compiled without the vmalloc test
//                             (internal::extract_pages<false>)
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bench_common.hpp"
#include "iov/page_alloc.hpp"
#include "kit/resident.hpp"

namespace iov::bench {
namespace {

constexpr size_t kRandOps = 65536;

using iov_test::resident_bytes;

// Bytes of this process on huge pages, anonymous or shared (smaps_rollup).
size_t huge_bytes() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f)
    return 0;
  char line[256];
  size_t total = 0, kb;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "AnonHugePages: %zu kB", &kb) == 1 || std::sscanf(line, "ShmemPmdMapped: %zu kB", &kb) == 1)
      total += kb << 10;
  std::fclose(f);
  return total;
}

// A brd-style store: page i holds bytes [i * PAGE_SIZE, (i + 1) * PAGE_SIZE).
struct store {
  gfp_t gfp;
  std::vector<page*> pages = std::vector<page*>(BENCH_PAGES);
  ~store() {
    for (page* p : pages)
      if (p)
        __free_page(p);
  }
  void write(size_t index, const char* from) {
    page*& p = pages[index];
    if (!p && !(p = alloc_page(gfp)))
      die("alloc_page");
    std::memcpy(page_address(p), from, PAGE_SIZE);
  }
};

gfp_t pool_gfp(bool shared) { return GFP_NOIO | __GFP_ZERO | (shared ? __GFP_VMAPPABLE : 0); }

alignas(PAGE_SIZE) char source_page[PAGE_SIZE];

void bm_first_write(benchmark::State& state, bool shared) {
  std::vector<size_t> order(BENCH_PAGES);
  for (size_t i = 0; i < BENCH_PAGES; i++)
    order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  std::memset(source_page, 0x33, sizeof source_page);
  size_t done = 0;
  double grown = 0, huge = 0;
  for (auto _ : state) {
    state.PauseTiming();
    page_alloc_drain_thread_cache();
    page_alloc_release_free();
    size_t before = resident_bytes(), huge_before = huge_bytes();
    auto* s = new store{pool_gfp(shared)};
    state.ResumeTiming();
    for (size_t index : order) {
      s->write(index, source_page);
      done += PAGE_SIZE;
    }
    state.PauseTiming();
    grown = static_cast<double>(resident_bytes()) - static_cast<double>(before);
    huge = static_cast<double>(huge_bytes()) - static_cast<double>(huge_before);
    delete s;
    state.ResumeTiming();
  }
  state.counters["rss_per_byte_stored"] = grown / BENCH_SIZE;
  state.counters["huge_per_byte_stored"] = huge / BENCH_SIZE;
  expect_bytes(state, done, BENCH_SIZE);
}

void bm_randwrite(benchmark::State& state, bool shared) {
  static store* stores[2];
  store*& s = stores[shared];
  if (!s) {
    s = new store{pool_gfp(shared)};
    for (size_t i = 0; i < BENCH_PAGES; i++)
      s->write(i, source_page);
  }
  std::vector<size_t> offsets;
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < kRandOps; i++)
    offsets.push_back(rng() % BENCH_PAGES);
  size_t done = 0;
  for (auto _ : state)
    for (size_t index : offsets) {
      s->write(index, source_page);
      done += PAGE_SIZE;
    }
  expect_bytes(state, done, kRandOps * PAGE_SIZE);
}

template <bool Library>
void bm_extract_kvec(benchmark::State& state) {
  constexpr unsigned kPages = 16;
  bench_memory& m = get_memory(memory_kind::tiled);
  page* array[kPages];
  size_t done = 0;
  uintptr_t sum = 0;
  for (auto _ : state) {
    iov_iter it = m.kvecs.iter(ITER_SOURCE, m.size);
    while (iov_iter_count(&it)) {
      size_t off;
      page** p = array;
      ssize_t n = Library ? iov_iter_extract_pages(&it, &p, kPages * PAGE_SIZE, kPages, 0, &off)
                          : iov::internal::extract_pages<false>(&it, &p, kPages * PAGE_SIZE, kPages, &off);
      if (n <= 0)
        die("extract");
      sum += reinterpret_cast<uintptr_t>(array[0]) + reinterpret_cast<uintptr_t>(array[kPages - 1]);
      done += static_cast<size_t>(n);
    }
    benchmark::DoNotOptimize(sum);
  }
  expect_bytes(state, done, m.size);
}

const bool registered = [] {
  set_baseline("shared_pool_first_write", "baseline_default_pool_first_write");
  register_sampled("iov_kunit_benchmark_shared_pool_first_write",
                   [](benchmark::State& s) { bm_first_write(s, true); });
  register_sampled("baseline_default_pool_first_write", [](benchmark::State& s) { bm_first_write(s, false); });
  set_baseline("shared_pool_randwrite", "baseline_default_pool_randwrite");
  register_sampled("iov_kunit_benchmark_shared_pool_randwrite", [](benchmark::State& s) { bm_randwrite(s, true); });
  register_sampled("baseline_default_pool_randwrite", [](benchmark::State& s) { bm_randwrite(s, false); });
  set_baseline("extract_kvec", "baseline_extract_kvec_flat");
  register_sampled("iov_kunit_benchmark_extract_kvec", bm_extract_kvec<true>);
  register_sampled("baseline_extract_kvec_flat", bm_extract_kvec<false>);
  return true;
}();

}  // namespace
}  // namespace iov::bench
