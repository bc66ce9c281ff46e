// copy_nocache_bench.cc: copy_from_iter_nocache() over the kernel benchmark's
// iterators, in the inline and out-of-line forms:
//
//   iov_kunit_benchmark_copy_nocache_<case>[_outofline]   streaming stores into scratch
//
// Its baseline in the summary is baseline_memcpy_flat (iterate_bench.cc: one
// glibc memcpy of the whole 256 MiB, which itself switches to streaming stores
// at that size); the cached copy it replaces is iov_kunit_benchmark_<case>.
// The figure that matters is the _streaming one (distinct memory), where
// cached stores pay for reading each destination line first.
//
//   iov-bench --filter='copy_nocache_bvec|baseline_memcpy_flat|^iov_kunit_benchmark_bvec'
#include <cstring>
#include <string>
#include <utility>

#include "bench_common.hpp"
#include "iov/internal/outofline.hpp"
#include "iov/copy_nocache.hpp"

namespace iov::bench {
namespace {

enum class form { inlined, outofline };

template <bench_case C, form F>
void bm_copy_nocache(benchmark::State& state, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  arm_copy_probes(m.buffer, m.scratch, m.size);
  size_t done = 0;
  for (auto _ : state) {
    done = for_each_iter<C>(m, ITER_SOURCE, [&m](iov_iter* it, size_t off) {
      size_t n = iov_iter_count(it);
      return F == form::inlined ? copy_from_iter_nocache(m.scratch + off, n, it)
                                : iov::internal::outofline::copy_from_iter_nocache(m.scratch + off, n, it);
    });
    benchmark::ClobberMemory();
  }
  if (!copy_probes_hold(m.buffer, m.scratch, m.size))
    state.SkipWithError("data check failed: the copy did not reach scratch");
  else
    expect_bytes(state, done, m.size);
}

template <bench_case C>
void register_case(memory_kind kind) {
  const std::string sfx = memory_suffix(kind), name = case_name(C);
  const std::string bench = "iov_kunit_benchmark_copy_nocache_" + name;
  set_baseline("copy_nocache_" + name, "baseline_memcpy_flat");
  register_sampled(bench + sfx, [kind](benchmark::State& s) { bm_copy_nocache<C, form::inlined>(s, kind); });
  register_sampled(bench + "_outofline" + sfx,
                   [kind](benchmark::State& s) { bm_copy_nocache<C, form::outofline>(s, kind); });
}

template <size_t... I>
void register_all(memory_kind kind, std::index_sequence<I...>) {
  (register_case<all_cases[I]>(kind), ...);
}

const bool registered = [] {
  for (memory_kind kind : {memory_kind::tiled, memory_kind::streaming})
    register_all(kind, std::make_index_sequence<std::size(all_cases)>{});
  return true;
}();

}  // namespace
}  // namespace iov::bench
