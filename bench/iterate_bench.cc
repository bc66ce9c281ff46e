// iterate_bench.cc: the kernel's iov_kunit_benchmark_* cases (David Howells'
// "iov_iter: Add benchmarking kunit tests"), each in four forms, with the
// baselines they are measured against:
//
//   iov_kunit_benchmark_<case>            copy_from_iter(): iterate_and_advance, steps inlined
//   iov_kunit_benchmark_<case>_outofline  iov::internal::outofline::copy_from_iter(): the walk compiled
//                                         once in src/copy.cc, steps inlined there
//   iov_kunit_benchmark_<case>_typed      iterate_<type>() calling the
//                                         library's step (the same work per piece)
//   iov_kunit_benchmark_<case>_indirect   generic_iterate() with the suite's own steps, which
//                                         it cannot recognise: every piece an indirect call,
//                                         as in the kernel's out-of-line experiment
//   iov_kunit_benchmark_zero_<case>...    the same for iov_iter_zero()
//   iov_kunit_benchmark_copy_to_<case>... the same for copy_to_iter() (L1 only)
//   baseline_memcpy_<case>, baseline_memset_<case>   plain memcpy/memset of the
//                                         case's pieces over the same bytes (for
//                                         bvec_split and xarray_to_bvec, of the
//                                         bvecs built as the case builds them)
//   baseline_memcpy_to_<case>             memcpy into the case's pieces
//   baseline_memcpy_flat, baseline_memset_flat       one call over all 256 MiB
//
// and the inline and out-of-line forms and the baselines again over distinct
// memory, suffixed _streaming; and the copies of the ubuf, iovec, kvec, bvec,
// xarray, bvecq and folioq cases with source and destination in L1
// (bench_common.hpp's l1 memory), suffixed _l1, where the walk's cost per
// piece shows most.
//
//   iov-bench --filter='^iov_kunit_benchmark_bvec'
//
// As in the kernel, a copy case reads the iterator (ITER_SOURCE) into scratch.
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "bench_common.hpp"
#include "case_names.hpp"
#include "iov/internal/outofline.hpp"

namespace iov::bench {
namespace {

enum class form { inlined, outofline, typed, indirect };

// Steps that generic_iterate() does not know (it runs the library's own
// directly, as the kernel's INDIRECT_CALL_*()), like the kernel experiment's
// shovel_to_kernel_iter(): they are reached through the pointer every time.
size_t shovel_from_iter(void* iter_from, size_t progress, size_t len, void* to, void*) {
  std::memcpy(static_cast<char*>(to) + progress, iter_from, len);
  return 0;
}
size_t shovel_to_iter(void* iter_to, size_t progress, size_t len, void* from, void*) {
  std::memcpy(iter_to, static_cast<const char*>(from) + progress, len);
  return 0;
}
size_t shovel_zero(void* iter_to, size_t, size_t len, void*, void*) {
  std::memset(iter_to, 0, len);
  return 0;
}
using op = iteration_op;

// The type-specific walk of a case's iterators.
template <bench_case C, class Step>
IOV_ALWAYS_INLINE size_t typed_walk(iov_iter* it, size_t len, void* priv, Step&& step) {
  if constexpr (C == bench_case::ubuf)
    return iterate_ubuf(it, len, priv, nullptr, step);
  else if constexpr (C == bench_case::iovec)
    return iterate_iovec(it, len, priv, nullptr, step);
  else if constexpr (C == bench_case::kvec)
    return iterate_kvec(it, len, priv, nullptr, step);
  else if constexpr (C == bench_case::xarray)
    return iterate_xarray(it, len, priv, nullptr, step);
  else if constexpr (C == bench_case::bvecq)
    return iterate_bvecq(it, len, priv, nullptr, step);
  else if constexpr (C == bench_case::folioq)
    return iterate_folioq(it, len, priv, nullptr, step);
  else  // bvec, bvec_split, xarray_to_bvec
    return iterate_bvec(it, len, priv, nullptr, step);
}

// Each operation's forms: its public function, its compiled-once walk, the
// suite's own step by pointer and the library's step. flat is scratch's side
// of a copy (nullptr for the zero-fill).
struct copy_from_ops {
  static size_t inlined(iov_iter* it, size_t len, void* flat) { return copy_from_iter(flat, len, it); }
  static size_t outofline(iov_iter* it, size_t len, void* flat) {
    return iov::internal::outofline::copy_from_iter(flat, len, it);
  }
  static constexpr iov_step_f shovel = shovel_from_iter, step = iov::internal::memcpy_from_iter;
};
struct copy_to_ops {
  static size_t inlined(iov_iter* it, size_t len, void* flat) { return copy_to_iter(flat, len, it); }
  static size_t outofline(iov_iter* it, size_t len, void* flat) {
    return iov::internal::outofline::copy_to_iter(flat, len, it);
  }
  static constexpr iov_step_f shovel = shovel_to_iter, step = iov::internal::memcpy_to_iter;
};
struct zero_ops {
  static size_t inlined(iov_iter* it, size_t len, void*) { return iov_iter_zero(len, it); }
  static size_t outofline(iov_iter* it, size_t len, void*) { return iov::internal::outofline::iov_iter_zero(len, it); }
  static constexpr iov_step_f shovel = shovel_zero, step = iov::internal::zero_to_iter;
};
template <op O>
using ops_of = std::conditional_t<O == op::copy, copy_from_ops, std::conditional_t<O == op::copy_to, copy_to_ops, zero_ops>>;

template <bench_case C, form F, op O>
IOV_ALWAYS_INLINE size_t run_form(iov_iter* it, void* flat) {
  using ops = ops_of<O>;
  size_t len = iov_iter_count(it);
  if constexpr (F == form::inlined)
    return ops::inlined(it, len, flat);
  else if constexpr (F == form::outofline)
    return ops::outofline(it, len, flat);
  else if constexpr (F == form::indirect)
    return generic_iterate(it, len, flat, nullptr, ops::shovel, ops::shovel);
  else
    return typed_walk<C>(it, len, flat, iov::internal::step_call<ops::step>{});
}

// The copy must have reached scratch, the copy into the iterator and the
// zero-fill the buffer.
void arm_probes(bench_memory& m, op o) {
  if (o != op::zero) {
    if (o == op::copy)
      arm_copy_probes(m.buffer, m.scratch, m.size);
    else
      arm_copy_probes(m.scratch, m.buffer, m.size);
    return;
  }
  for (size_t off : probe_offsets(m.size))
    std::memset(m.buffer + off, 0xa5, PAGE_SIZE);
}

bool probes_hold(const bench_memory& m, op o) {
  if (o == op::copy)
    return copy_probes_hold(m.buffer, m.scratch, m.size);
  if (o == op::copy_to)
    return copy_probes_hold(m.scratch, m.buffer, m.size);
  static const char zeroes[PAGE_SIZE] = {};
  for (size_t off : probe_offsets(m.size))
    if (std::memcmp(m.buffer + off, zeroes, PAGE_SIZE) != 0)
      return false;
  return true;
}

template <bench_case C, form F, op O>
void bm_iterate(benchmark::State& state, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  arm_probes(m, O);
  size_t done = 0;
  for (auto _ : state) {
    done = 0;
    for (size_t pass = 0; pass < m.passes(); pass++)
      done += for_each_iter<C>(m, O == op::copy ? ITER_SOURCE : ITER_DEST, [&m](iov_iter* it, size_t off) {
        return run_form<C, F, O>(it, O == op::zero ? nullptr : m.scratch + off);
      });
    benchmark::ClobberMemory();
  }
  if (!probes_hold(m, O))
    state.SkipWithError("data check failed: the walk did not move the bytes");
  else
    expect_bytes(state, done, BENCH_SIZE);
  if constexpr (O != op::copy)
    restore_pattern(m);
}

// Do the case's iterators get built while it runs (a bio per chunk)?
constexpr bool builds_bvecs(bench_case c) {
  return c == bench_case::bvec_split || c == bench_case::xarray_to_bvec;
}

// memcpy/memset of exactly the pieces the case's step receives. Where the
// case builds its bvecs as it goes (allocation, and for xarray_to_bvec
// iov_iter_extract_pages()), the baseline builds them the same way and then
// memcpy/memsets each bvec straight from the array: both pay for building
// the bio, so the ratio prices the iov_iter walk alone, as on every other case.
template <op O>
void bm_baseline(benchmark::State& state, bench_case c, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  const auto& pieces = case_pieces(c, m);
  // One piece of the buffer at base, whose copy lands at scratch + off.
  auto piece = [&m](char* base, size_t off, size_t len) {
    if constexpr (O == op::copy)
      std::memcpy(m.scratch + off, base, len);
    else if constexpr (O == op::copy_to)
      std::memcpy(base, m.scratch + off, len);
    else
      std::memset(base, 0, len);
  };
  size_t done = 0;
  for (auto _ : state) {
    done = 0;
    for (size_t pass = 0; pass < m.passes(); pass++) {
      if (builds_bvecs(c)) {
        done += for_each_iter(c, m, O == op::copy ? ITER_SOURCE : ITER_DEST, [&piece](iov_iter* it, size_t off) {
          size_t n = 0;
          for (unsigned long k = 0; k < it->nr_segs; k++) {
            const bio_vec& bv = it->bvec[k];
            piece(static_cast<char*>(page_address(bv.bv_page)) + bv.bv_offset, off + n, bv.bv_len);
            n += bv.bv_len;
          }
          return n;
        });
      } else {
        for (const auto& [off, len] : pieces)
          piece(m.buffer + off, off, len);
        done += m.size;
      }
    }
    benchmark::ClobberMemory();
  }
  expect_bytes(state, done, BENCH_SIZE);
  if constexpr (O != op::copy)
    restore_pattern(m);
}

template <op O>
void bm_flat(benchmark::State& state, memory_kind kind) {
  bench_memory& m = get_memory(kind);
  for (auto _ : state) {
    if constexpr (O == op::copy)
      std::memcpy(m.scratch, m.buffer, m.size);
    else
      std::memset(m.buffer, 0, m.size);
    benchmark::ClobberMemory();
  }
  expect_bytes(state, m.size, m.size);
  if constexpr (O != op::copy)
    restore_pattern(m);
}

// The case's baseline: baseline_memcpy_bvec for "bvec", baseline_memcpy_to_bvec
// for "copy_to_bvec", baseline_memset_bvec for "zero_bvec".
std::string baseline_of(op o, bench_case c) {
  const char* prefix[] = {"baseline_memcpy_", "baseline_memcpy_to_", "baseline_memset_"};
  return prefix[static_cast<int>(o)] + std::string(case_name(c));
}

template <bench_case C, op O>
void register_case(memory_kind kind) {
  const std::string sfx = memory_suffix(kind);
  const std::string group = iteration_group(O, C), base = baseline_of(O, C);
  const std::string bench = "iov_kunit_benchmark_" + group;
  auto reg = [kind](const std::string& name, std::function<void(benchmark::State&)> fn) {
    if (kind == memory_kind::l1)
      note_l1_case(name);
    register_sampled(name, std::move(fn));
  };
  set_baseline(group, base);
  reg(base + sfx, [kind](benchmark::State& s) { bm_baseline<O>(s, C, kind); });
  reg(bench + sfx, [kind](benchmark::State& s) { bm_iterate<C, form::inlined, O>(s, kind); });
  reg(bench + "_outofline" + sfx, [kind](benchmark::State& s) { bm_iterate<C, form::outofline, O>(s, kind); });
  // Over streaming memory every form runs at the memory's pace; the typed
  // and indirect forms add nothing there but time.
  if (kind != memory_kind::streaming) {
    reg(bench + "_typed" + sfx, [kind](benchmark::State& s) { bm_iterate<C, form::typed, O>(s, kind); });
    reg(bench + "_indirect" + sfx, [kind](benchmark::State& s) { bm_iterate<C, form::indirect, O>(s, kind); });
  }
}

template <op O, size_t... I>
void register_op(memory_kind kind, std::index_sequence<I...>) {
  const std::string flat = O == op::copy ? "baseline_memcpy_flat" : "baseline_memset_flat";
  register_sampled(flat + memory_suffix(kind), [kind](benchmark::State& s) { bm_flat<O>(s, kind); });
  (register_case<all_cases[I], O>(kind), ...);
}

template <bench_case... C>
void register_l1(std::integer_sequence<bench_case, C...>) {
  (register_case<C, op::copy>(memory_kind::l1), ...);
  (register_case<C, op::copy_to>(memory_kind::l1), ...);
}

// Tiled first: the iteration figures the targets are about. Then, in L1, the
// copies both ways over the types whose walks differ (issue 30: the walk's
// cost per piece against a memcpy loop).
const bool registered = [] {
  constexpr auto cases = std::make_index_sequence<std::size(all_cases)>{};
  for (memory_kind kind : {memory_kind::tiled, memory_kind::streaming}) {
    register_op<op::copy>(kind, cases);
    register_op<op::zero>(kind, cases);
  }
  register_l1(std::integer_sequence<bench_case, bench_case::ubuf, bench_case::iovec, bench_case::kvec,
                                    bench_case::bvec, bench_case::xarray, bench_case::bvecq, bench_case::folioq>{});
  return true;
}();

}  // namespace
}  // namespace iov::bench
