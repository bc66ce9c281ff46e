// crc32c_pieces_bench.cc: what the CRC costs however its bytes are cut. 64 KiB
// of distinct, contiguous pages (in cache: every sample walks them 4096 times,
// 256 MiB in all) cut into 4 KiB or 512-byte bvec pieces, against one flat
// ISA-L call over the same contiguous bytes; and the fused copy against the
// copy alone over the same pieces, there and over 64 MiB of distinct memory:
//
//   iov_kunit_benchmark_crc32c_l2_<4k|512>[_outofline]   crc32c_iter() over the pieces
//   iov_kunit_benchmark_crc32c_update_l2_512             crc32c_update() per piece, by hand
//   baseline_isal_crc32c_l2_<4k|512>                     crc32_iscsi() per piece (for reference)
//   iov_kunit_benchmark_crc32c_l2_flat                   one crc32c() over the 64 KiB
//   baseline_isal_crc32c_l2_flat                         one crc32_iscsi() over them: the baseline of all the above
//   iov_kunit_benchmark_crc32c_copy_l2_<4k|512>[_outofline]
//                                                        crc32c_and_copy_from_iter() into 64 KiB of scratch,
//   baseline_copy_l2_<4k|512>                            against copy_from_iter() over the same pieces
//   iov_kunit_benchmark_crc32c_copy_64m[_outofline]_streaming
//                                                        the same over the first 64 MiB of the streaming
//   baseline_memcpy_64m_streaming                        memory in 4 KiB pieces, against one memcpy of 64 MiB
//
//   iov-bench --rounds=5 --filter='_l2_|_64m'
#include <isa-l/crc.h>

#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "iov/internal/outofline.hpp"
#include "iov/crc32c.hpp"

namespace iov::bench {
namespace {

enum class form { inlined, outofline };

constexpr size_t L2_SIZE = 64 * 1024;
constexpr size_t L2_PASSES = BENCH_SIZE / L2_SIZE;  // 256 MiB per sample, as every other case
constexpr size_t STREAM_SIZE = 64u << 20;
constexpr size_t STREAM_PASSES = BENCH_SIZE / STREAM_SIZE;

// The 64 KiB, its scratch, and its pieces as bvecs of each size.
struct l2_memory {
  char* buffer;
  char* scratch;
  std::vector<bio_vec> bvecs_4k, bvecs_512;
  uint32_t crc;  // crc32c(~0u, buffer), what every walk must find
  const std::vector<bio_vec>& bvecs(size_t piece) const { return piece == 512 ? bvecs_512 : bvecs_4k; }
};

std::vector<bio_vec> cut(char* buffer, size_t size, size_t piece) {
  std::vector<bio_vec> v;
  for (size_t off = 0; off < size; off += piece)
    v.push_back({virt_to_page(buffer + off - off % PAGE_SIZE), static_cast<unsigned>(piece),
                 static_cast<unsigned>(off % PAGE_SIZE)});
  return v;
}

l2_memory& l2() {
  static l2_memory* m = [] {
    auto* l = new l2_memory{};  // kept until exit
    l->buffer = static_cast<char*>(page_address(alloc_pages(GFP_KERNEL, 4)));
    l->scratch = static_cast<char*>(page_address(alloc_pages(GFP_KERNEL, 4)));
    for (size_t k = 0; k < L2_SIZE; k++) l->buffer[k] = static_cast<char>(k * 131 + (k >> 9));
    std::memset(l->scratch, 0, L2_SIZE);
    l->bvecs_4k = cut(l->buffer, L2_SIZE, PAGE_SIZE);
    l->bvecs_512 = cut(l->buffer, L2_SIZE, 512);
    l->crc = crc32_iscsi(reinterpret_cast<unsigned char*>(l->buffer), static_cast<int>(L2_SIZE), ~0u);
    return l;
  }();
  return *m;
}

void check(benchmark::State& state, uint32_t crc, uint32_t want, size_t done) {
  if (crc != want)
    state.SkipWithError("crc differs from one crc32_iscsi() over the same bytes");
  else
    expect_bytes(state, done, BENCH_SIZE);
}

// op(it) on a fresh iterator over the 64 KiB in `piece`-byte bvecs, once per
// pass of a sample; the bytes op reports, summed.
template <class Op>
size_t walk_passes(const l2_memory& m, size_t piece, Op&& op) {
  const auto& bv = m.bvecs(piece);
  size_t done = 0;
  for (size_t pass = 0; pass < L2_PASSES; pass++) {
    iov_iter it;
    iov_iter_bvec(&it, ITER_SOURCE, bv.data(), bv.size(), L2_SIZE);
    done += op(&it);
  }
  return done;
}

template <form F>
void bm_iter(benchmark::State& state, size_t piece) {
  l2_memory& m = l2();
  uint32_t crc = 0;
  size_t done = 0;
  for (auto _ : state) {
    done = walk_passes(m, piece, [&crc](iov_iter* it) {
      crc = ~0u;
      return F == form::inlined ? crc32c_iter(it, L2_SIZE, &crc) : iov::internal::outofline::crc32c_iter(it, L2_SIZE, &crc);
    });
    benchmark::DoNotOptimize(crc);
  }
  check(state, crc, m.crc, done);
}

// A caller feeding the pieces itself through the streaming form.
void bm_update(benchmark::State& state, size_t piece) {
  l2_memory& m = l2();
  uint32_t crc = 0;
  for (auto _ : state) {
    for (size_t pass = 0; pass < L2_PASSES; pass++) {
      crc32c_state st;
      crc32c_init(&st, ~0u);
      for (size_t off = 0; off < L2_SIZE; off += piece) crc32c_update(&st, m.buffer + off, piece);
      crc = crc32c_final(&st);
    }
    benchmark::DoNotOptimize(crc);
  }
  check(state, crc, m.crc, BENCH_SIZE);
}

void bm_isal_pieces(benchmark::State& state, size_t piece) {
  l2_memory& m = l2();
  uint32_t crc = 0;
  for (auto _ : state) {
    for (size_t pass = 0; pass < L2_PASSES; pass++) {
      crc = ~0u;
      for (size_t off = 0; off < L2_SIZE; off += piece)
        crc = crc32_iscsi(reinterpret_cast<unsigned char*>(m.buffer + off), static_cast<int>(piece), crc);
    }
    benchmark::DoNotOptimize(crc);
  }
  check(state, crc, m.crc, BENCH_SIZE);
}

template <bool Isal>
void bm_flat(benchmark::State& state) {
  l2_memory& m = l2();
  uint32_t crc = 0;
  for (auto _ : state) {
    for (size_t pass = 0; pass < L2_PASSES; pass++) {
      benchmark::DoNotOptimize(m.buffer);
      crc = Isal ? crc32_iscsi(reinterpret_cast<unsigned char*>(m.buffer), static_cast<int>(L2_SIZE), ~0u)
                 : crc32c(~0u, m.buffer, L2_SIZE);
    }
    benchmark::DoNotOptimize(crc);
  }
  check(state, crc, m.crc, BENCH_SIZE);
}

template <form F>
void bm_copy_crc(benchmark::State& state, size_t piece) {
  l2_memory& m = l2();
  uint32_t crc = 0;
  size_t done = 0;
  for (auto _ : state) {
    done = walk_passes(m, piece, [&](iov_iter* it) {
      crc = ~0u;
      size_t n = F == form::inlined ? crc32c_and_copy_from_iter(m.scratch, L2_SIZE, &crc, it)
                                    : iov::internal::outofline::crc32c_and_copy_from_iter(m.scratch, L2_SIZE, &crc, it);
      benchmark::ClobberMemory();
      return n;
    });
  }
  if (std::memcmp(m.scratch, m.buffer, L2_SIZE) != 0)
    state.SkipWithError("data check failed: the copy did not reach scratch");
  else
    check(state, crc, m.crc, done);
  std::memset(m.scratch, 0, L2_SIZE);
}

void bm_copy(benchmark::State& state, size_t piece) {
  l2_memory& m = l2();
  size_t done = 0;
  for (auto _ : state) {
    done = walk_passes(m, piece, [&m](iov_iter* it) {
      size_t n = copy_from_iter(m.scratch, L2_SIZE, it);
      benchmark::ClobberMemory();
      return n;
    });
  }
  expect_bytes(state, done, BENCH_SIZE);
  std::memset(m.scratch, 0, L2_SIZE);
}

// The first 64 MiB of the streaming memory, as 4 KiB bvecs, into its scratch.
template <form F>
void bm_copy_crc_streaming(benchmark::State& state) {
  bench_memory& m = get_memory(memory_kind::streaming);
  static const uint32_t want = crc32_iscsi(reinterpret_cast<unsigned char*>(m.buffer), STREAM_SIZE, ~0u);
  arm_copy_probes(m.buffer, m.scratch, STREAM_SIZE);
  uint32_t crc = 0;
  size_t done = 0;
  for (auto _ : state) {
    done = 0;
    for (size_t pass = 0; pass < STREAM_PASSES; pass++) {
      iov_iter it;
      iov_iter_bvec(&it, ITER_SOURCE, m.bvecs.bvecs().data(), STREAM_SIZE / PAGE_SIZE, STREAM_SIZE);
      crc = ~0u;
      done += F == form::inlined ? crc32c_and_copy_from_iter(m.scratch, STREAM_SIZE, &crc, &it)
                                 : iov::internal::outofline::crc32c_and_copy_from_iter(m.scratch, STREAM_SIZE, &crc, &it);
      benchmark::ClobberMemory();
    }
  }
  if (!copy_probes_hold(m.buffer, m.scratch, STREAM_SIZE))
    state.SkipWithError("data check failed: the copy did not reach scratch");
  else
    check(state, crc, want, done);
}

void bm_memcpy_streaming(benchmark::State& state) {
  bench_memory& m = get_memory(memory_kind::streaming);
  for (auto _ : state) {
    for (size_t pass = 0; pass < STREAM_PASSES; pass++) {
      std::memcpy(m.scratch, m.buffer, STREAM_SIZE);
      benchmark::ClobberMemory();
    }
  }
  expect_bytes(state, BENCH_SIZE, BENCH_SIZE);
}

const bool registered = [] {
  for (size_t piece : {size_t{4096}, size_t{512}}) {
    const std::string size = piece == 512 ? "512" : "4k";
    const std::string crc = "iov_kunit_benchmark_crc32c_l2_" + size;
    const std::string copy = "iov_kunit_benchmark_crc32c_copy_l2_" + size;
    set_baseline("crc32c_l2_" + size, "baseline_isal_crc32c_l2_flat");
    set_baseline("crc32c_copy_l2_" + size, "baseline_copy_l2_" + size);
    register_sampled("baseline_isal_crc32c_l2_" + size, [piece](benchmark::State& s) { bm_isal_pieces(s, piece); });
    register_sampled(crc, [piece](benchmark::State& s) { bm_iter<form::inlined>(s, piece); });
    register_sampled(crc + "_outofline", [piece](benchmark::State& s) { bm_iter<form::outofline>(s, piece); });
    register_sampled("baseline_copy_l2_" + size, [piece](benchmark::State& s) { bm_copy(s, piece); });
    register_sampled(copy, [piece](benchmark::State& s) { bm_copy_crc<form::inlined>(s, piece); });
    register_sampled(copy + "_outofline", [piece](benchmark::State& s) { bm_copy_crc<form::outofline>(s, piece); });
  }
  set_baseline("crc32c_update_l2_512", "baseline_isal_crc32c_l2_flat");
  register_sampled("iov_kunit_benchmark_crc32c_update_l2_512", [](benchmark::State& s) { bm_update(s, 512); });
  set_baseline("crc32c_l2_flat", "baseline_isal_crc32c_l2_flat");
  register_sampled("baseline_isal_crc32c_l2_flat", bm_flat<true>);
  register_sampled("iov_kunit_benchmark_crc32c_l2_flat", bm_flat<false>);
  set_baseline("crc32c_copy_64m", "baseline_memcpy_64m");
  register_sampled("baseline_memcpy_64m_streaming", bm_memcpy_streaming);
  register_sampled("iov_kunit_benchmark_crc32c_copy_64m_streaming", bm_copy_crc_streaming<form::inlined>);
  register_sampled("iov_kunit_benchmark_crc32c_copy_64m_outofline_streaming", bm_copy_crc_streaming<form::outofline>);
  return true;
}();

}  // namespace
}  // namespace iov::bench
