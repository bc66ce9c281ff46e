// crc32c_bench.cc: CRC-32C over the kernel benchmark's iterators, alone and
// fused with the copy, in the inline and out-of-line forms, against ISA-L
// called directly and against the copy it rides on:
//
//   iov_kunit_benchmark_crc32c_<case>[_outofline]        crc32c_iter() over the case's iterators
//   baseline_isal_crc32c_<case>                          crc32_iscsi() per piece of the case
//   baseline_isal_crc32c_flat                            one crc32_iscsi() walk over the 256 MiB
//   iov_kunit_benchmark_crc32c_copy_<case>[_outofline]   crc32c_and_copy_from_iter() into scratch;
//                                                        its baseline is the copy alone,
//                                                        iov_kunit_benchmark_<case> (copy_from_iter)
//   baseline_copy_then_crc32c_<case>                     per piece: memcpy, then crc32_iscsi() of the copy
//   iov_kunit_benchmark_crc32c_copy_to_bvec[_outofline]  crc32c_and_copy_to_iter() from scratch,
//                                                        against baseline_copy_to_iter_bvec
//
// each over tiled and (suffix _streaming) distinct memory.
//
//   iov-bench --filter='crc32c_(copy_)?bvec|baseline_.*crc32c_bvec|^iov_kunit_benchmark_bvec'
#include <isa-l/crc.h>

#include <cstring>
#include <string>
#include <utility>

#include "bench_common.hpp"
#include "iov/internal/outofline.hpp"
#include "iov/crc32c.hpp"

namespace iov::bench {
namespace {

enum class form { inlined, outofline };

// The standard walk's answer, to check every timed one against.
uint32_t flat_crc(bench_memory& m) {
  static uint32_t crc[2];
  static bool done[2];
  int k = m.kind == memory_kind::tiled ? 0 : 1;
  if (!done[k]) {
    crc[k] = crc32c(~0u, m.buffer, m.size);
    done[k] = true;
  }
  return crc[k];
}

void check_crc(benchmark::State& state, bench_memory& m, uint32_t crc, size_t done) {
  if (crc != flat_crc(m))
    state.SkipWithError("crc differs from one crc32c() over the whole buffer");
  else
    expect_bytes(state, done, m.size);
}

template <bench_case C, form F>
void bm_crc(benchmark::State& state, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  uint32_t crc = 0;
  size_t done = 0;
  for (auto _ : state) {
    crc = ~0u;
    done = for_each_iter<C>(m, ITER_SOURCE, [&crc](iov_iter* it, size_t) {
      return F == form::inlined ? crc32c_iter(it, iov_iter_count(it), &crc)
                                : iov::internal::outofline::crc32c_iter(it, iov_iter_count(it), &crc);
    });
    benchmark::DoNotOptimize(crc);
  }
  check_crc(state, m, crc, done);
}

template <bench_case C, form F>
void bm_crc_copy(benchmark::State& state, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  arm_copy_probes(m.buffer, m.scratch, m.size);
  uint32_t crc = 0;
  size_t done = 0;
  for (auto _ : state) {
    crc = ~0u;
    done = for_each_iter<C>(m, ITER_SOURCE, [&](iov_iter* it, size_t off) {
      return F == form::inlined ? crc32c_and_copy_from_iter(m.scratch + off, iov_iter_count(it), &crc, it)
                                : iov::internal::outofline::crc32c_and_copy_from_iter(m.scratch + off, iov_iter_count(it), &crc, it);
    });
    benchmark::ClobberMemory();
  }
  if (!copy_probes_hold(m.buffer, m.scratch, m.size))
    state.SkipWithError("data check failed: the copy did not reach scratch");
  else
    check_crc(state, m, crc, done);
}

// The other direction, bvec only: scratch (holding the buffer's bytes) into
// the buffer's pages, so the CRC is the same as the other cases'.
template <form F>
void bm_crc_copy_to_bvec(benchmark::State& state, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  std::memcpy(m.scratch, m.buffer, kind == memory_kind::tiled ? tile_size() : m.size);
  uint32_t crc = 0;
  size_t done = 0;
  for (auto _ : state) {
    crc = ~0u;
    done = for_each_iter<bench_case::bvec>(m, ITER_DEST, [&](iov_iter* it, size_t off) {
      return F == form::inlined ? crc32c_and_copy_to_iter(m.scratch + off, iov_iter_count(it), &crc, it)
                                : iov::internal::outofline::crc32c_and_copy_to_iter(m.scratch + off, iov_iter_count(it), &crc, it);
    });
    benchmark::ClobberMemory();
  }
  check_crc(state, m, crc, done);
}

void bm_copy_to_bvec(benchmark::State& state, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  std::memcpy(m.scratch, m.buffer, kind == memory_kind::tiled ? tile_size() : m.size);
  size_t done = 0;
  for (auto _ : state) {
    done = for_each_iter<bench_case::bvec>(
        m, ITER_DEST, [&](iov_iter* it, size_t off) { return copy_to_iter(m.scratch + off, iov_iter_count(it), it); });
    benchmark::ClobberMemory();
  }
  expect_bytes(state, done, m.size);
}

// ISA-L on exactly the pieces the case's step receives.
void bm_isal_pieces(benchmark::State& state, bench_case c, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  const auto& pieces = case_pieces(c, m);
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = ~0u;
    for (const auto& [off, len] : pieces)
      crc = crc32_iscsi(reinterpret_cast<unsigned char*>(m.buffer + off), static_cast<int>(len), crc);
    benchmark::DoNotOptimize(crc);
  }
  check_crc(state, m, crc, m.size);
}

void bm_isal_flat(benchmark::State& state, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = crc32c(~0u, m.buffer, m.size);  // 1 GiB per crc32_iscsi() call
    benchmark::DoNotOptimize(crc);
  }
  check_crc(state, m, crc, m.size);
}

// The unfused way: copy a piece, then CRC the copy while it is in L1.
void bm_copy_then_crc(benchmark::State& state, bench_case c, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  arm_copy_probes(m.buffer, m.scratch, m.size);
  const auto& pieces = case_pieces(c, m);
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = ~0u;
    for (const auto& [off, len] : pieces) {
      std::memcpy(m.scratch + off, m.buffer + off, len);
      crc = crc32_iscsi(reinterpret_cast<unsigned char*>(m.scratch + off), static_cast<int>(len), crc);
    }
    benchmark::ClobberMemory();
  }
  if (!copy_probes_hold(m.buffer, m.scratch, m.size))
    state.SkipWithError("data check failed: the copy did not reach scratch");
  else
    check_crc(state, m, crc, m.size);
}

template <bench_case C>
void register_case(memory_kind kind) {
  const std::string sfx = memory_suffix(kind), name = case_name(C);
  const std::string crc = "iov_kunit_benchmark_crc32c_" + name, copy = "iov_kunit_benchmark_crc32c_copy_" + name;
  set_baseline("crc32c_" + name, "baseline_isal_crc32c_" + name);
  set_baseline("crc32c_copy_" + name, "iov_kunit_benchmark_" + name);  // the copy alone
  register_sampled("baseline_isal_crc32c_" + name + sfx, [kind](benchmark::State& s) { bm_isal_pieces(s, C, kind); });
  register_sampled(crc + sfx, [kind](benchmark::State& s) { bm_crc<C, form::inlined>(s, kind); });
  register_sampled(crc + "_outofline" + sfx, [kind](benchmark::State& s) { bm_crc<C, form::outofline>(s, kind); });
  register_sampled("baseline_copy_then_crc32c_" + name + sfx,
                   [kind](benchmark::State& s) { bm_copy_then_crc(s, C, kind); });
  register_sampled(copy + sfx, [kind](benchmark::State& s) { bm_crc_copy<C, form::inlined>(s, kind); });
  register_sampled(copy + "_outofline" + sfx, [kind](benchmark::State& s) { bm_crc_copy<C, form::outofline>(s, kind); });
}

template <size_t... I>
void register_all(memory_kind kind, std::index_sequence<I...>) {
  const std::string sfx = memory_suffix(kind);
  register_sampled("baseline_isal_crc32c_flat" + sfx, [kind](benchmark::State& s) { bm_isal_flat(s, kind); });
  (register_case<all_cases[I]>(kind), ...);
  set_baseline("crc32c_copy_to_bvec", "baseline_copy_to_iter_bvec");
  register_sampled("baseline_copy_to_iter_bvec" + sfx, [kind](benchmark::State& s) { bm_copy_to_bvec(s, kind); });
  register_sampled("iov_kunit_benchmark_crc32c_copy_to_bvec" + sfx,
                   [kind](benchmark::State& s) { bm_crc_copy_to_bvec<form::inlined>(s, kind); });
  register_sampled("iov_kunit_benchmark_crc32c_copy_to_bvec_outofline" + sfx,
                   [kind](benchmark::State& s) { bm_crc_copy_to_bvec<form::outofline>(s, kind); });
}

const bool registered = [] {
  for (memory_kind kind : {memory_kind::tiled, memory_kind::streaming})
    register_all(kind, std::make_index_sequence<std::size(all_cases)>{});
  return true;
}();

}  // namespace
}  // namespace iov::bench
