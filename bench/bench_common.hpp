// bench_common.hpp: what every part of iov-bench shares — the kernel's 256 MiB
// benchmark buffers, the iterator shapes of David Howells' iov_kunit_benchmark_*
// cases built over them, and the registration helpers that give a case the
// kernel's 16 samples.
//
//   iov::bench::register_sampled("iov_kunit_benchmark_crc32c_bvec", [](benchmark::State& state) {
//     iov::bench::bench_memory& m = iov::bench::get_memory(iov::bench::memory_kind::tiled);
//     uint32_t crc = 0;
//     size_t n = 0;
//     for (auto _ : state)
//       n = iov::bench::for_each_iter<iov::bench::bench_case::bvec>(m, iov::ITER_SOURCE,
//           [&](iov::iov_iter* it, size_t) { return iov::crc32c_iter(it, it->count, &crc); });
//     iov::bench::expect_bytes(state, n, m.size);
//   });
//   IOV_BENCH_BASELINE("crc32c_bvec", "baseline_crc32c_flat");   // optional: the summary's baseline
//
// Two kinds of memory back every case. `tiled` is the kernel's trick (its
// iov_kunit_create_source() vmaps one page 65536 times): 256 MiB of address
// space mapped again and again onto one small memfd, so a sample measures the
// iteration, not DRAM. `streaming` is 256 MiB of distinct memory, the same
// walk paced by memory bandwidth; its cases carry the suffix `_streaming`.
// `l1` is tiled memory whose source and destination share one 32 KiB tile, so
// both stay in L1 and a copy's fixed cost per piece shows; it spans L1_SPAN,
// walked BENCH_SIZE / L1_SPAN times a sample; its cases carry the suffix `_l1`.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "iov/iov.hpp"
#include "kit/iter_builder.hpp"

namespace iov::bench {

inline constexpr size_t BENCH_SIZE = 256u << 20;              // the kernel's 256 MiB
inline constexpr size_t BENCH_PAGES = BENCH_SIZE / PAGE_SIZE;  // 65536
inline constexpr int BENCH_SAMPLES = 16;                       // IOV_KUNIT_NR_SAMPLES; the first is dropped
inline constexpr size_t BENCH_KVECS = 8;                       // iov_kunit_benchmark_kvec's kvec[8]
inline constexpr size_t BENCH_SPLIT_PAGES = 64;                // bvec_split: one 64-entry array per 256 KiB
inline constexpr size_t BENCH_DECANT_PAGES = 256;              // xarray_to_bvec: 256-page bvecs per batch
inline constexpr size_t BENCH_QUEUE_SLOTS = 31;  // the queues: a folio_queue's 31 slots a segment, for both

enum class memory_kind { tiled, streaming, l1 };

// The name suffix of a memory kind: "", "_streaming" or "_l1".
const char* memory_suffix(memory_kind kind);

// The L1 kind's one tile: buffer maps its first half again and again,
// scratch its second (16 KiB each, 32 KiB together: in the L1 of every CPU
// measured, 32 KiB on Zen 3 and 4, 48 KiB on the Xeons and Zen 5).
inline constexpr size_t L1_TILE = 32 * 1024;
// The L1 kind's address space: 8 MiB, each 4 KiB frame of a half mapped 512
// times, as the tiled kind's frames are. Mapped through 256 MiB (8192 times),
// a frame made every access a hypervisor exit on a machine with shadow paging
// (AMD EPYC Zen 5 under PVM, 2026-12-07: 600 ns a page at 1024 mappings a
// frame and more, 2 ns at 768 and fewer), memcpy baseline included.
inline constexpr size_t L1_SPAN = 8u << 20;

// Whether a registered case runs over the L1 kind: the report and the JSON
// read a trailing _l1 as the memory only for these (the zero scan's
// zero_scan_flat_l1 is a case of its own).
void note_l1_case(const std::string& name);
bool is_l1_case(const std::string& name);

// The tile of the tiled memory (default 512 KiB: buffer and scratch tiles fit
// L2 together, and each frame has few enough mappings; docs/benchmarks.md says
// why smaller tiles are pathological on some virtual machines;
// vm.max_map_count, 65530 by default, caps the mappings at 2 * 256 MiB / tile).
// Set before the first get_memory(); a power of two in [PAGE_SIZE, 1 MiB].
void set_tile_size(size_t bytes);
size_t tile_size();

// One kind's buffers and the segment arrays of the cases, built on first use
// and kept until exit. As in the kernel, `buffer` is what the iterators
// describe and `scratch` the flat memory on the other side of a copy.
struct bench_memory {
  memory_kind kind;
  size_t size;      // what the iterators describe: BENCH_SIZE, L1_SPAN for the l1 kind
  char* buffer;     // filled with a byte pattern when created
  char* scratch;
  // The segments of the cases over buffer (iov_test::iter_builder, shared
  // with the tests and the fuzz targets):
  iov_test::iter_builder iovecs{ITER_IOVEC};    // BENCH_PAGES segments of one page
  iov_test::iter_builder kvecs{ITER_KVEC};      // BENCH_KVECS equal segments
  iov_test::iter_builder bvecs{ITER_BVEC};      // BENCH_PAGES bvecs of one page
  iov_test::iter_builder bvecqs{ITER_BVECQ};    // the same bvecs, BENCH_QUEUE_SLOTS a segment (bv points into its array)
  iov_test::iter_builder folioqs{ITER_FOLIOQ};  // the pages as one-page folios, BENCH_QUEUE_SLOTS a segment
  iov_test::iter_builder pages{ITER_XARRAY};    // index i -> the page at buffer + i * PAGE_SIZE
  // The same segments as (offset, length) in buffer, for the baselines
  // (case_pieces): every page, and the kvec case's segments.
  std::vector<std::pair<size_t, size_t>> page_pieces, kvec_pieces;

  // The walks over size a sample makes, so that every sample moves BENCH_SIZE.
  size_t passes() const { return BENCH_SIZE / size; }
};
bench_memory& get_memory(memory_kind kind);

// Writes buffer's byte pattern again (over its one tile when tiled): a case
// that changes the buffer restores it, so every case, in any order and any
// round, finds the bytes it was checked against.
void restore_pattern(bench_memory& m);

// Builds m's segments (iovecs, kvecs, bvecs, the queues, the xarray) over m->buffer,
// for memory made elsewhere (the zero scans' all-zero buffers).
void describe_pages(bench_memory* m);

// Reports what failed (with errno) and exits: the suite cannot run without it.
[[noreturn]] void die(const char* what);

// A few pages spread over a buffer of `size` bytes whose contents are checked
// after a timed copy: arm_copy_probes() writes the complement of `from` into
// `to` there, so a copy that did not reach them shows in copy_probes_hold().
inline std::array<size_t, 3> probe_offsets(size_t size) {
  return {0, size / 2 + 3 * PAGE_SIZE, size - PAGE_SIZE};
}
void arm_copy_probes(const char* from, char* to, size_t size);
bool copy_probes_hold(const char* from, const char* to, size_t size);

// The kernel's benchmark cases; each walks the same 256 MiB of buffer.
// bvecq and folioq are ours (the kernel's benchmarks predate them).
enum class bench_case { ubuf, iovec, kvec, bvec, bvec_split, xarray, xarray_to_bvec, bvecq, folioq };
inline constexpr bench_case all_cases[] = {bench_case::ubuf,       bench_case::iovec,  bench_case::kvec,
                                           bench_case::bvec,       bench_case::bvec_split,
                                           bench_case::xarray,     bench_case::xarray_to_bvec,
                                           bench_case::bvecq,      bench_case::folioq};
const char* case_name(bench_case c);  // "ubuf", ..., "xarray_to_bvec"

// for_each_iter<C>(m, direction, op): builds the iterators of case C over
// m.buffer, in order, and calls op(iov_iter* it, size_t offset) for each,
// where offset is the iterator's first byte within m.size (the matching
// place in m.scratch). op returns the bytes it processed; a short op ends the
// walk. Returns the total. The shapes are the kernel's (over 256 MiB; the l1
// kind's 8 MiB has 2048 pages, and its kvec eight segments of 1 MiB):
//   ubuf            65536 separate one-page ITER_UBUF iterators
//   iovec           one ITER_IOVEC of 65536 one-page segments
//   kvec            one ITER_KVEC of 8 segments of 32 MiB
//   bvec            one ITER_BVEC of 65536 one-page bvecs
//   bvec_split      a fresh 64-entry bvec array allocated per 256 KiB chunk
//   xarray          one ITER_XARRAY over 65536 indices holding one page each
//   xarray_to_bvec  pages extracted from an ITER_XARRAY 256 at a time
//                   (iov_iter_extract_pages), decanted into a freshly
//                   allocated bvec array, then walked as an ITER_BVEC
//   bvecq           one ITER_BVECQ over the 65536 one-page bvecs, 31 a segment
//   folioq          one ITER_FOLIOQ over the 65536 pages as one-page folios, 31 a segment
// The allocations of bvec_split and xarray_to_bvec are part of what is timed,
// as in the kernel (which models building a bio).
template <bench_case C, class Op>
size_t for_each_iter(bench_memory& m, unsigned direction, Op&& op);

// The same, with the case chosen at run time.
template <class Op>
size_t for_each_iter(bench_case c, bench_memory& m, unsigned direction, Op&& op);

// The contiguous pieces a case's step receives over m, as (offset, length)
// in m.buffer: one page each, except kvec's eight segments. The baselines
// memcpy/memset exactly these.
inline const std::vector<std::pair<size_t, size_t>>& case_pieces(bench_case c, const bench_memory& m) {
  return c == bench_case::kvec ? m.kvec_pieces : m.page_pieces;
}

// Registers a benchmark with the kernel's sampling: 16 repetitions of one
// iteration each (KTAP prints avg/stddev of samples 2..16), wall-clock time.
benchmark::internal::Benchmark* register_sampled(const std::string& name,
                                                 std::function<void(benchmark::State&)> fn);

// Marks the sample failed (KTAP "not ok") unless got == want, as the kernel's
// KUNIT_EXPECT_EQ(test, copied, size); also records the bytes processed.
void expect_bytes(benchmark::State& state, size_t got, size_t want);

// The summary compares a group (a case name without the
// iov_kunit_benchmark_ prefix and the _outofline/_typed/_streaming suffixes,
// e.g. "bvec", "zero_xarray", "crc32c_bvec") with a baseline benchmark (named
// without _streaming). Without a registration it looks for "baseline_<group>".
void set_baseline(const std::string& group, const std::string& baseline_name);
std::string baseline_for(const std::string& group);  // "" when none registered
struct baseline_registration {
  baseline_registration(const char* group, const char* baseline_name) { set_baseline(group, baseline_name); }
};
#define IOV_BENCH_BASELINE_CAT2(a, b) a##b
#define IOV_BENCH_BASELINE_CAT(a, b) IOV_BENCH_BASELINE_CAT2(a, b)
#define IOV_BENCH_BASELINE(group, baseline)                                          \
  static ::iov::bench::baseline_registration IOV_BENCH_BASELINE_CAT(iov_bench_baseline_, \
                                                                    __LINE__)(group, baseline)

// The check that the out-of-line form is a real call: a counting step passed
// to iov::generic_iterate must be invoked through its pointer, once per piece,
// from code of the library's generic_iterate (not from a copy inlined into the
// suite). Returns true on success; *detail says what was found.
// outofline_check.cc.
bool check_generic_iterate_out_of_line(std::string* detail);


// ---------------------------------------------------------------------------
// Implementation of the templates.

namespace internal {
// One heap allocation per batch for the arrays of bvec_split and
// xarray_to_bvec, as the kernel's kunit_kmalloc_array per chunk.
inline void* alloc_batch(size_t bytes) {
  void* p = std::malloc(bytes);
  if (!p)
    std::abort();
  return p;
}
}  // namespace internal

template <bench_case C, class Op>
size_t for_each_iter(bench_memory& m, unsigned direction, Op&& op) {
  iov_iter it;
  size_t done = 0;
  if constexpr (C == bench_case::ubuf) {
    for (size_t off = 0; off < m.size; off += PAGE_SIZE) {
      iov_iter_ubuf(&it, direction, m.buffer + off, PAGE_SIZE);
      size_t n = op(&it, off);
      done += n;
      if (n != PAGE_SIZE)
        break;
    }
  } else if constexpr (C == bench_case::iovec) {
    it = m.iovecs.iter(direction, m.size);
    done = op(&it, size_t{0});
  } else if constexpr (C == bench_case::kvec) {
    it = m.kvecs.iter(direction, m.size);
    done = op(&it, size_t{0});
  } else if constexpr (C == bench_case::bvec) {
    it = m.bvecs.iter(direction, m.size);
    done = op(&it, size_t{0});
  } else if constexpr (C == bench_case::bvec_split) {
    for (size_t off = 0; off < m.size; off += BENCH_SPLIT_PAGES * PAGE_SIZE) {
      size_t part = std::min(m.size - off, BENCH_SPLIT_PAGES * PAGE_SIZE);
      auto* bv = static_cast<bio_vec*>(internal::alloc_batch(BENCH_SPLIT_PAGES * sizeof(bio_vec)));
      for (size_t j = 0; j < BENCH_SPLIT_PAGES; j++)
        bvec_set_page(&bv[j], virt_to_page(m.buffer + off + j * PAGE_SIZE), PAGE_SIZE, 0);
      iov_iter_bvec(&it, direction, bv, BENCH_SPLIT_PAGES, part);
      size_t n = op(&it, off);
      std::free(bv);
      done += n;
      if (n != part)
        break;
    }
  } else if constexpr (C == bench_case::bvecq) {
    it = m.bvecqs.iter(direction, m.size);
    done = op(&it, size_t{0});
  } else if constexpr (C == bench_case::folioq) {
    it = m.folioqs.iter(direction, m.size);
    done = op(&it, size_t{0});
  } else if constexpr (C == bench_case::xarray) {
    it = m.pages.iter(direction, m.size);
    done = op(&it, size_t{0});
  } else if constexpr (C == bench_case::xarray_to_bvec) {
    iov_iter xiter = m.pages.iter(direction, m.size);
    while (iov_iter_count(&xiter)) {
      // As the kernel's, the page list lives in the tail of the bvec array:
      // bvec[j] is written only after pages[j] is read, and never reaches a
      // later pages[k].
      constexpr size_t n_pages = BENCH_DECANT_PAGES;
      void* batch = internal::alloc_batch(n_pages * sizeof(bio_vec));
      auto* bv = static_cast<bio_vec*>(batch);
      page** pages = reinterpret_cast<page**>(static_cast<char*>(batch) + n_pages * sizeof(bio_vec) -
                                              n_pages * sizeof(page*));
      size_t offset0 = 0;
      ssize_t got = iov_iter_extract_pages(&xiter, &pages, n_pages * PAGE_SIZE, n_pages, 0, &offset0);
      if (got <= 0) {
        std::free(batch);
        break;
      }
      size_t part = static_cast<size_t>(got), left = part, j = 0;
      do {
        size_t chunk = std::min(left, PAGE_SIZE - offset0);
        page* pg = pages[j];
        bvec_set_page(&bv[j++], pg, static_cast<unsigned>(chunk), static_cast<unsigned>(offset0));
        offset0 = 0;
        left -= chunk;
      } while (left);
      iov_iter_bvec(&it, direction, bv, j, part);
      size_t n = op(&it, done);
      std::free(batch);
      done += n;
      if (n != part)
        break;
    }
  }
  return done;
}

template <class Op>
size_t for_each_iter(bench_case c, bench_memory& m, unsigned direction, Op&& op) {
  switch (c) {
    case bench_case::ubuf:
      return for_each_iter<bench_case::ubuf>(m, direction, op);
    case bench_case::iovec:
      return for_each_iter<bench_case::iovec>(m, direction, op);
    case bench_case::kvec:
      return for_each_iter<bench_case::kvec>(m, direction, op);
    case bench_case::bvec:
      return for_each_iter<bench_case::bvec>(m, direction, op);
    case bench_case::bvec_split:
      return for_each_iter<bench_case::bvec_split>(m, direction, op);
    case bench_case::xarray:
      return for_each_iter<bench_case::xarray>(m, direction, op);
    case bench_case::xarray_to_bvec:
      return for_each_iter<bench_case::xarray_to_bvec>(m, direction, op);
    case bench_case::bvecq:
      return for_each_iter<bench_case::bvecq>(m, direction, op);
    case bench_case::folioq:
      return for_each_iter<bench_case::folioq>(m, direction, op);
  }
  return 0;
}

}  // namespace iov::bench
