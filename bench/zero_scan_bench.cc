// zero_scan_bench.cc: zero detection over the kernel benchmark's iterators, in
// the inline and out-of-line forms, against ISA-L's isal_zero_detect():
//
//   iov_kunit_benchmark_zero_scan_<case>[_outofline]     iov_iter_is_zero() over the case's iterators
//   iov_kunit_benchmark_skip_zeroes_<case>[_outofline]   iov_iter_skip_zeroes() over them
//   baseline_isal_zero_detect_<case>                     isal_zero_detect() per piece of the case
//   iov_kunit_benchmark_zero_scan_flat                   one mem_is_zero() over the 256 MiB
//   baseline_isal_zero_detect_flat                       one isal_zero_detect() over the same
//   iov_kunit_benchmark_zero_scan_flat_l1                mem_is_zero() of one 16 KiB buffer, 16384 times
//   baseline_isal_zero_detect_flat_l1                    isal_zero_detect() of the same
//   baseline_read_loop_flat[_l1]                         a plain OR-reduction over the same: the read limit
//
// each over all-zero memory: tiled (every page of the 256 MiB is the kernel's
// shared zero page, so the data sits in L1) and distinct (suffix _streaming).
// IOV_SIMD=portable|avx2|avx512 in the environment forces a level (unforced: the measured choice).
//
//   iov-bench --filter='zero_scan|skip_zeroes|zero_detect'
#include <isa-l/mem_routines.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "bench_common.hpp"
#include "iov/internal/outofline.hpp"
#include "iov/internal/simd_level.hpp"
#include "iov/zero_scan.hpp"

namespace iov::bench {
namespace {

enum class form { inlined, outofline };

constexpr size_t L1_BUFFER = 16 * 1024;

// The cases' segment arrays over 256 MiB of zeroes. Tiled: a private
// anonymous mapping that is only ever read maps every page to the kernel's
// zero page, one 4 KiB frame (the kernel benchmark's vmap of one page many
// times): in L1 on Intel; on AMD Zen each page is a new virtual alias the L1's
// way predictor misses on, about L2 speed (l1_zeroes below). Streaming: the same, written once so each page is its own.
bench_memory& zero_memory(memory_kind kind) {
  static bench_memory* slots[2];
  bench_memory*& m = slots[kind == memory_kind::tiled ? 0 : 1];
  if (m)
    return *m;
  m = new bench_memory{};  // kept until exit
  m->kind = kind;
  m->size = BENCH_SIZE;
  int prot = kind == memory_kind::tiled ? PROT_READ : PROT_READ | PROT_WRITE;
  void* p = mmap(nullptr, BENCH_SIZE, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    die("mmap (zero memory)");
  madvise(p, BENCH_SIZE, MADV_NOHUGEPAGE);  // a huge zero page would not fit L1
  m->buffer = static_cast<char*>(p);
  if (kind == memory_kind::streaming) {
    std::memset(m->buffer, 0, BENCH_SIZE);
  } else {
    volatile char sink = 0;
    for (size_t off = 0; off < BENCH_SIZE; off += PAGE_SIZE)
      sink = sink + m->buffer[off];  // fault every page in now, not in a sample
  }
  m->scratch = nullptr;
  describe_pages(m);
  return *m;
}

template <bench_case C, form F>
void bm_is_zero(benchmark::State& state, memory_kind kind) {
  bench_memory& m = zero_memory(kind);
  size_t done = 0;
  for (auto _ : state) {
    done = for_each_iter<C>(m, ITER_SOURCE, [](iov_iter* it, size_t) {
      size_t n = iov_iter_count(it);
      bool zero = F == form::inlined ? iov_iter_is_zero(it, n) : iov::internal::outofline::iov_iter_is_zero(it, n);
      return zero ? n : 0;
    });
    benchmark::DoNotOptimize(done);
  }
  expect_bytes(state, done, m.size);
}

template <bench_case C, form F>
void bm_skip_zeroes(benchmark::State& state, memory_kind kind) {
  bench_memory& m = zero_memory(kind);
  size_t done = 0;
  for (auto _ : state) {
    done = for_each_iter<C>(m, ITER_SOURCE, [](iov_iter* it, size_t) {
      size_t n = iov_iter_count(it);
      return F == form::inlined ? iov_iter_skip_zeroes(it, n) : iov::internal::outofline::iov_iter_skip_zeroes(it, n);
    });
    benchmark::DoNotOptimize(done);
  }
  expect_bytes(state, done, m.size);
}

// ISA-L on exactly the pieces the case's step receives.
void bm_isal_pieces(benchmark::State& state, bench_case c, memory_kind kind) {
  bench_memory& m = zero_memory(kind);
  const auto& pieces = case_pieces(c, m);
  size_t done = 0;
  for (auto _ : state) {
    done = 0;
    for (const auto& [off, len] : pieces) {
      if (isal_zero_detect(m.buffer + off, len) != 0)
        break;
      done += len;
    }
    benchmark::DoNotOptimize(done);
  }
  expect_bytes(state, done, m.size);
}

enum class flat { iov, isal, read_loop };

// The read limit: every byte loaded and OR-ed, four 16-byte accumulators (the
// base x86-64 vector width, whatever the SIMD level), tested once at the end.
// No early exit, no probes: what reading the memory costs, and nothing else.
bool read_loop_is_zero(const char* p, size_t len) {
  using v16 = unsigned long long __attribute__((vector_size(16)));
  v16 a = {}, b = {}, c = {}, d = {};
  size_t k = 0;
  for (; k + 64 <= len; k += 64) {
    v16 x[4];
    std::memcpy(x, p + k, sizeof x);
    a |= x[0];
    b |= x[1];
    c |= x[2];
    d |= x[3];
  }
  v16 acc = (a | b) | (c | d);
  unsigned char tail = 0;
  for (; k < len; k++)
    tail |= static_cast<unsigned char>(p[k]);
  return (acc[0] | acc[1] | tail) == 0;
}

template <flat F>
bool flat_is_zero(const char* p, size_t len) {
  switch (F) {
    case flat::isal: return isal_zero_detect(const_cast<char*>(p), len) == 0;
    case flat::read_loop: return read_loop_is_zero(p, len);
    default: return mem_is_zero(p, len);
  }
}

template <flat F>
void bm_flat(benchmark::State& state, memory_kind kind) {
  bench_memory& m = zero_memory(kind);
  bool zero = false;
  for (auto _ : state) {
    zero = flat_is_zero<F>(m.buffer, m.size);
    benchmark::DoNotOptimize(zero);
  }
  expect_bytes(state, zero ? m.size : 0, m.size);
}

// The L1 cases' buffer: the dispatch trials' zeroes (simd_trial_zeroes),
// written once so that its pages are its own: never written, each would be
// the kernel's zero page, and on AMD Zen the L1 data cache, whose way
// predictor works on virtual addresses, misses on each new alias of a line
// (16 KiB of such aliases: the AVX-512 scan 99 ns against 31 ns written on
// Zen 5, ISA-L 126 against 92).
const char* l1_zeroes() {
  static_assert(L1_BUFFER == iov::internal::kSimdTrialBytes);
  return reinterpret_cast<const char*>(iov::internal::simd_trial_zeroes());
}

// One small buffer again and again: the kernel's speed when the data is in L1.
template <flat F>
void bm_flat_l1(benchmark::State& state) {
  const char* buf = l1_zeroes();
  size_t done = 0;
  for (auto _ : state) {
    done = 0;
    for (size_t k = 0; k < BENCH_SIZE / L1_BUFFER; k++) {
      benchmark::DoNotOptimize(buf);
      bool zero = flat_is_zero<F>(buf, L1_BUFFER);
      if (!zero)
        break;
      done += L1_BUFFER;
    }
  }
  expect_bytes(state, done, BENCH_SIZE);
}

template <bench_case C>
void register_case(memory_kind kind) {
  const std::string sfx = memory_suffix(kind), name = case_name(C);
  const std::string scan = "iov_kunit_benchmark_zero_scan_" + name, skip = "iov_kunit_benchmark_skip_zeroes_" + name;
  const std::string base = "baseline_isal_zero_detect_" + name;
  set_baseline("zero_scan_" + name, base);
  set_baseline("skip_zeroes_" + name, base);
  register_sampled(base + sfx, [kind](benchmark::State& s) { bm_isal_pieces(s, C, kind); });
  register_sampled(scan + sfx, [kind](benchmark::State& s) { bm_is_zero<C, form::inlined>(s, kind); });
  register_sampled(scan + "_outofline" + sfx, [kind](benchmark::State& s) { bm_is_zero<C, form::outofline>(s, kind); });
  register_sampled(skip + sfx, [kind](benchmark::State& s) { bm_skip_zeroes<C, form::inlined>(s, kind); });
  register_sampled(skip + "_outofline" + sfx,
                   [kind](benchmark::State& s) { bm_skip_zeroes<C, form::outofline>(s, kind); });
}

template <size_t... I>
void register_all(memory_kind kind, std::index_sequence<I...>) {
  const std::string sfx = memory_suffix(kind);
  set_baseline("zero_scan_flat", "baseline_isal_zero_detect_flat");
  register_sampled("baseline_isal_zero_detect_flat" + sfx,
                   [kind](benchmark::State& s) { bm_flat<flat::isal>(s, kind); });
  register_sampled("baseline_read_loop_flat" + sfx, [kind](benchmark::State& s) { bm_flat<flat::read_loop>(s, kind); });
  register_sampled("iov_kunit_benchmark_zero_scan_flat" + sfx,
                   [kind](benchmark::State& s) { bm_flat<flat::iov>(s, kind); });
  (register_case<all_cases[I]>(kind), ...);
}

const bool registered = [] {
  set_baseline("zero_scan_flat_l1", "baseline_isal_zero_detect_flat_l1");
  register_sampled("baseline_isal_zero_detect_flat_l1", [](benchmark::State& s) { bm_flat_l1<flat::isal>(s); });
  register_sampled("baseline_read_loop_flat_l1", [](benchmark::State& s) { bm_flat_l1<flat::read_loop>(s); });
  register_sampled("iov_kunit_benchmark_zero_scan_flat_l1", [](benchmark::State& s) { bm_flat_l1<flat::iov>(s); });
  for (memory_kind kind : {memory_kind::tiled, memory_kind::streaming})
    register_all(kind, std::make_index_sequence<std::size(all_cases)>{});
  return true;
}();

}  // namespace
}  // namespace iov::bench
