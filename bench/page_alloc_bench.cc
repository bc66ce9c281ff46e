// page_alloc_bench.cc: the page allocator (page.hpp) and what it gives the
// RAM disks, each against its baseline in the same run:
//   alloc_pages_order0/9   alloc+free pairs (batches of 64, resp. 4) against
//                          aligned_alloc/free of the same sizes
//   brd_randread           65536 random 4 KiB reads from a written 256 MiB brd
//                          against random 4 KiB memcpy out of a 256 MiB region
//                          on transparent huge pages (same offsets)
//   brd_randread_batch16   the same reads handed over 16 at a time
//                          (blkdev::submit_batch: brd fetches their slots first)
//   brd_randwrite          the same writes into written pages, against memcpy
//                          into that region; brd_randwrite_nocache: the same
//                          with copy_mode=nocache (streaming stores);
//                          brd_randwrite_batch16: 16 at a time, as above;
//                          brd_first_write: every page written once into an
//                          empty device (allocation included)
//   null_blk_randread/randwrite  the same on a memory-backed null_blk, against
//                          the same baselines
//   brd_resident, null_blk_resident  a 256 MiB device written whole; counter
//                          rss_per_byte_stored: the growth of the resident
//                          set over the bytes stored (the data itself is 1.0)
//   brd_churn              a 1 GiB brd written whole, discarded, ten times;
//                          counters: resident bytes after the first and the
//                          last pass, and their ratio
#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "iov/page_alloc.hpp"
#include "iov_drivers/blkdev.hpp"
#include "kit/resident.hpp"

namespace iov::bench {
namespace {

constexpr size_t kRandOps = 65536;

using iov_test::resident_bytes;

// --- alloc + free -------------------------------------------------------------

template <bool Library>
void bm_alloc_free(benchmark::State& state, unsigned order, size_t batch, size_t rounds) {
  std::vector<void*> held(batch);
  size_t done = 0;
  for (auto _ : state) {
    for (size_t r = 0; r < rounds; r++) {
      for (size_t i = 0; i < batch; i++)
        held[i] = Library ? static_cast<void*>(alloc_pages(GFP_KERNEL, order))
                          : std::aligned_alloc(PAGE_SIZE << order, PAGE_SIZE << order);
      for (size_t i = 0; i < batch; i++) {
        if (!held[i])
          die("allocation failed");
        if constexpr (Library)
          __free_pages(static_cast<page*>(held[i]), order);
        else
          std::free(held[i]);
      }
      done += batch;
    }
  }
  state.counters["allocs"] = static_cast<double>(done);
  expect_bytes(state, done, batch * rounds);
}

// --- brd against memcpy over a huge-page region -------------------------------

// 4 KiB requests on a ubuf over one page-aligned buffer.
int submit_page(blkdev* dev, req_op op, size_t off, char* buf) {
  iov_iter it;
  iov_iter_ubuf(&it, op == REQ_OP_READ ? ITER_DEST : ITER_SOURCE, buf, PAGE_SIZE);
  blk_request rq{.op = op, .sector = off >> SECTOR_SHIFT, .iter = &it};
  return dev->submit(rq);
}

std::unique_ptr<blkdev> make_device(const char* driver) {
  blkdev_settings o{{"size", "256m"}};
  if (std::strcmp(driver, "null_blk") == 0)
    o.emplace_back("memory_backed", "1");
  auto d = blkdev_create(driver, o);
  if (!d.ok())
    die(driver);
  return std::move(*d);
}

// The random offsets, and the memcpy baselines' region on transparent huge pages.
struct rand_fixture {
  char* region;  // BENCH_SIZE, written
  std::vector<size_t> offsets;
  alignas(PAGE_SIZE) char buf[PAGE_SIZE];

  rand_fixture() {
    std::memset(buf, 0x5a, sizeof buf);
    void* raw = mmap(nullptr, 2 * BENCH_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
      die("mmap");
    region = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + (2u << 20) - 1) & ~uintptr_t{(2u << 20) - 1});
    madvise(region, BENCH_SIZE, MADV_HUGEPAGE);
    std::memset(region, 0x5a, BENCH_SIZE);
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < kRandOps; i++)
      offsets.push_back(rng() % BENCH_PAGES * PAGE_SIZE);
  }
};

rand_fixture& fixture() {
  static rand_fixture* f = new rand_fixture;
  return *f;
}

// A 256 MiB device of the driver with every page written, made once.
blkdev* written_device(const char* driver) {
  static std::map<std::string, std::unique_ptr<blkdev>> devices;
  auto& d = devices[driver];
  if (!d) {
    d = make_device(driver);
    for (size_t off = 0; off < BENCH_SIZE; off += PAGE_SIZE)
      if (submit_page(d.get(), REQ_OP_WRITE, off, fixture().buf))
        die("write");
  }
  return d.get();
}

void bm_dev_rand(benchmark::State& state, const char* driver, req_op op, copy_mode mode = copy_mode::modern) {
  rand_fixture& f = fixture();
  blkdev* dev = written_device(driver);
  dev->set_copy_mode(mode);
  size_t done = 0;
  for (auto _ : state)
    for (size_t off : f.offsets)
      if (submit_page(dev, op, off, f.buf) == 0)
        done += PAGE_SIZE;
  expect_bytes(state, done, kRandOps * PAGE_SIZE);
}

// The same requests handed over 16 at a time (blkdev::submit_batch), as a
// caller with a queue of them would: brd fetches their xarray slots first.
void bm_dev_rand_batch(benchmark::State& state, const char* driver, req_op op) {
  constexpr size_t kBatch = 16;
  rand_fixture& f = fixture();
  blkdev* dev = written_device(driver);
  dev->set_copy_mode(copy_mode::modern);
  iov_iter its[kBatch];
  blk_request rqs[kBatch];
  int results[kBatch];
  size_t done = 0;
  for (auto _ : state)
    for (size_t i = 0; i < f.offsets.size(); i += kBatch) {
      const size_t n = std::min(kBatch, f.offsets.size() - i);
      for (size_t k = 0; k < n; k++) {
        iov_iter_ubuf(&its[k], op == REQ_OP_READ ? ITER_DEST : ITER_SOURCE, f.buf, PAGE_SIZE);
        rqs[k] = {.op = op, .sector = f.offsets[i + k] >> SECTOR_SHIFT, .iter = &its[k]};
      }
      if (dev->submit_batch({rqs, n}, results) == 0)
        done += n * PAGE_SIZE;
    }
  expect_bytes(state, done, kRandOps * PAGE_SIZE);
}

// What earlier work left free goes back to the system (the last sample's
// pages after their grace period, the allocator's spare chunks and this
// thread's cache, the C library's free heap), so that a resident-set growth
// measured next is not hidden by memory reused from it.
void return_free_memory() {
  rcu_barrier();
  page_alloc_drain_thread_cache();
  page_alloc_release_free();
  malloc_trim(0);
}

// The resident set's growth while an empty 256 MiB device is written whole,
// per byte stored.
void bm_resident(benchmark::State& state, const char* driver) {
  size_t done = 0;
  double grown = 0;  // signed: a resident set may shrink
  alignas(PAGE_SIZE) static char buf[PAGE_SIZE];
  std::memset(buf, 0x77, sizeof buf);
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<blkdev> dev = make_device(driver);
    return_free_memory();
    size_t before = resident_bytes();
    state.ResumeTiming();
    for (size_t off = 0; off < BENCH_SIZE; off += PAGE_SIZE)
      if (submit_page(dev.get(), REQ_OP_WRITE, off, buf) == 0)
        done += PAGE_SIZE;
    state.PauseTiming();
    grown = static_cast<double>(resident_bytes()) - static_cast<double>(before);
    dev.reset();
    state.ResumeTiming();
  }
  state.counters["rss_per_byte_stored"] = grown / BENCH_SIZE;
  expect_bytes(state, done, BENCH_SIZE);
}

void bm_memcpy_rand(benchmark::State& state, bool to_region) {
  rand_fixture& f = fixture();
  size_t done = 0;
  // A length the compiler cannot see, as brd's copies have: the C library's
  // memcpy, not a copy inlined for a constant 4096.
  size_t len = PAGE_SIZE;
  benchmark::DoNotOptimize(len);
  for (auto _ : state)
    for (size_t off : f.offsets) {
      if (to_region)
        std::memcpy(f.region + off, f.buf, len);
      else
        std::memcpy(f.buf, f.region + off, len);
      benchmark::ClobberMemory();
      done += PAGE_SIZE;
    }
  expect_bytes(state, done, kRandOps * PAGE_SIZE);
}

// Every page of an empty 256 MiB brd written once, in random order.
void bm_brd_first_write(benchmark::State& state) {
  std::vector<size_t> order(BENCH_PAGES);
  for (size_t i = 0; i < BENCH_PAGES; i++)
    order[i] = i * PAGE_SIZE;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  alignas(PAGE_SIZE) static char buf[PAGE_SIZE];
  std::memset(buf, 0x33, sizeof buf);
  size_t done = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<blkdev> dev = make_device("brd");
    state.ResumeTiming();
    for (size_t off : order)
      if (submit_page(dev.get(), REQ_OP_WRITE, off, buf) == 0)
        done += PAGE_SIZE;
    state.PauseTiming();
    dev.reset();
    state.ResumeTiming();
  }
  expect_bytes(state, done, BENCH_SIZE);
}

// A 1 GiB brd written whole and discarded, ten times.
void bm_brd_churn(benchmark::State& state) {
  constexpr size_t kSize = size_t{1} << 30, kChunk = 1u << 20;
  std::vector<char> buf(kChunk, 0x44);
  size_t rss_first = 0, rss_last = 0, before = 0, done = 0;
  for (auto _ : state) {
    auto d = blkdev_create("brd", {{"size", "1g"}});
    if (!d.ok())
      die("brd");
    return_free_memory();
    before = resident_bytes();
    for (int pass = 0; pass < 10; pass++) {
      for (size_t off = 0; off < kSize; off += kChunk) {
        iov_iter it;
        iov_iter_ubuf(&it, ITER_SOURCE, buf.data(), kChunk);
        blk_request rq{.op = REQ_OP_WRITE, .sector = off >> SECTOR_SHIFT, .iter = &it};
        if ((*d)->submit(rq) == 0)
          done += kChunk;
      }
      size_t rss = resident_bytes() - before;
      (pass == 0 ? rss_first : rss_last) = rss;
      blk_request discard{.op = REQ_OP_DISCARD, .sector = 0, .nr_sectors = kSize >> SECTOR_SHIFT};
      if ((*d)->submit(discard))
        die("discard");
      rcu_barrier();  // discarded pages are freed after a grace period
    }
    state.counters["rss_after_discard"] = static_cast<double>(resident_bytes()) - static_cast<double>(before);
  }
  state.counters["rss_first_pass"] = static_cast<double>(rss_first);
  state.counters["rss_last_pass"] = static_cast<double>(rss_last);
  state.counters["rss_ratio_last_first"] = rss_first ? static_cast<double>(rss_last) / rss_first : 0;
  state.counters["rss_per_byte_stored"] = static_cast<double>(rss_last) / kSize;
  expect_bytes(state, done, 10 * kSize);
}

const bool registered = [] {
  set_baseline("alloc_pages_order0", "baseline_alloc_pages_order0");
  register_sampled("iov_kunit_benchmark_alloc_pages_order0",
                   [](benchmark::State& s) { bm_alloc_free<true>(s, 0, 64, 1024); });
  register_sampled("baseline_alloc_pages_order0", [](benchmark::State& s) { bm_alloc_free<false>(s, 0, 64, 1024); });
  set_baseline("alloc_pages_order9", "baseline_alloc_pages_order9");
  register_sampled("iov_kunit_benchmark_alloc_pages_order9",
                   [](benchmark::State& s) { bm_alloc_free<true>(s, 9, 4, 256); });
  register_sampled("baseline_alloc_pages_order9", [](benchmark::State& s) { bm_alloc_free<false>(s, 9, 4, 256); });

  set_baseline("brd_randread", "baseline_brd_randread");
  register_sampled("iov_kunit_benchmark_brd_randread", [](benchmark::State& s) { bm_dev_rand(s, "brd", REQ_OP_READ); });
  register_sampled("baseline_brd_randread", [](benchmark::State& s) { bm_memcpy_rand(s, false); });
  set_baseline("brd_randread_batch16", "baseline_brd_randread");
  register_sampled("iov_kunit_benchmark_brd_randread_batch16",
                   [](benchmark::State& s) { bm_dev_rand_batch(s, "brd", REQ_OP_READ); });
  set_baseline("brd_randwrite", "baseline_brd_randwrite");
  register_sampled("iov_kunit_benchmark_brd_randwrite", [](benchmark::State& s) { bm_dev_rand(s, "brd", REQ_OP_WRITE); });
  register_sampled("baseline_brd_randwrite", [](benchmark::State& s) { bm_memcpy_rand(s, true); });
  set_baseline("brd_randwrite_nocache", "baseline_brd_randwrite");
  register_sampled("iov_kunit_benchmark_brd_randwrite_nocache",
                   [](benchmark::State& s) { bm_dev_rand(s, "brd", REQ_OP_WRITE, copy_mode::nocache); });
  set_baseline("brd_randwrite_batch16", "baseline_brd_randwrite");
  register_sampled("iov_kunit_benchmark_brd_randwrite_batch16",
                   [](benchmark::State& s) { bm_dev_rand_batch(s, "brd", REQ_OP_WRITE); });
  set_baseline("brd_first_write", "baseline_brd_randwrite");
  register_sampled("iov_kunit_benchmark_brd_first_write", bm_brd_first_write);
  set_baseline("null_blk_randread", "baseline_brd_randread");
  register_sampled("iov_kunit_benchmark_null_blk_randread",
                   [](benchmark::State& s) { bm_dev_rand(s, "null_blk", REQ_OP_READ); });
  set_baseline("null_blk_randwrite", "baseline_brd_randwrite");
  register_sampled("iov_kunit_benchmark_null_blk_randwrite",
                   [](benchmark::State& s) { bm_dev_rand(s, "null_blk", REQ_OP_WRITE); });
  register_sampled("iov_kunit_benchmark_brd_resident", [](benchmark::State& s) { bm_resident(s, "brd"); })
      ->Repetitions(2);
  register_sampled("iov_kunit_benchmark_null_blk_resident", [](benchmark::State& s) { bm_resident(s, "null_blk"); })
      ->Repetitions(2);
  register_sampled("iov_kunit_benchmark_brd_churn", bm_brd_churn)->Repetitions(2);
  return true;
}();

}  // namespace
}  // namespace iov::bench
