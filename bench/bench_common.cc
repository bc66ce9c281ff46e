// bench_common.cc: the benchmark buffers (tiled and streaming), the segment
// arrays of the cases and the registration helpers.
//
//   iov::bench::bench_memory& m = iov::bench::get_memory(iov::bench::memory_kind::tiled);
//   // m.buffer, m.scratch: 256 MiB each, backed by one 512 KiB tile apiece
#include "bench_common.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>

namespace iov::bench {

namespace {

size_t g_tile = 512 * 1024;

// A memfd of `bytes`, the physical memory behind a tiled buffer.
int tile_fd(const char* name, size_t bytes) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0)
    die("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0)
    die("ftruncate");
  return fd;
}

// `size` bytes of address space mapped again and again onto the `tile` bytes of fd
// at `offset`, populated up front so no sample takes page faults.
char* map_tiled(size_t size, int fd, size_t offset, size_t tile) {
  void* base = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED)
    die("mmap (reserve)");
  char* p = static_cast<char*>(base);
  for (size_t off = 0; off < size; off += tile) {
    void* q = mmap(p + off, tile, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd,
                   static_cast<off_t>(offset));
    if (q == MAP_FAILED) {
      std::fprintf(stderr, "iov-bench: mapping tile %zu of %zu failed (vm.max_map_count?); try a larger --tile\n",
                   off / tile, size / tile);
      die("mmap (tile)");
    }
  }
  return p;
}

// 256 MiB of distinct memory in 4 KiB pages (as the kernel's vmap), faulted in.
char* map_streaming(size_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    die("mmap (streaming)");
  madvise(p, size, MADV_NOHUGEPAGE);
  std::memset(p, 0, size);
  return static_cast<char*>(p);
}

void fill_pattern(char* p, size_t len) {
  for (size_t off = 0; off + sizeof(uint64_t) <= len; off += sizeof(uint64_t)) {
    uint64_t v = (off * 0x9E3779B97F4A7C15ull) ^ 0x5A5A5A5A5A5A5A5Aull;
    std::memcpy(p + off, &v, sizeof v);
  }
}

// The bytes at the start of buffer that hold the pattern, the rest mapping
// them again: a tile of the tiled kind, half the l1 kind's one tile, all of
// the streaming kind.
size_t pattern_bytes(memory_kind kind) {
  return kind == memory_kind::tiled ? g_tile : kind == memory_kind::l1 ? L1_TILE / 2 : BENCH_SIZE;
}

bench_memory* create_memory(memory_kind kind) {
  auto* m = new bench_memory{};  // kept until exit, as the kernel's kunit resources are per test
  m->kind = kind;
  m->size = kind == memory_kind::l1 ? L1_SPAN : BENCH_SIZE;
  if (kind != memory_kind::streaming) {
    // tiled: one tile each; l1: the two halves of one tile.
    size_t tile = pattern_bytes(kind);
    int fd = tile_fd("iov-bench-buffer", kind == memory_kind::l1 ? L1_TILE : tile);
    m->buffer = map_tiled(m->size, fd, 0, tile);
    if (kind == memory_kind::l1) {
      m->scratch = map_tiled(m->size, fd, tile, tile);
    } else {
      close(fd);
      fd = tile_fd("iov-bench-scratch", tile);
      m->scratch = map_tiled(m->size, fd, 0, tile);
    }
    close(fd);
    fill_pattern(m->buffer, tile);
    // MAP_POPULATE maps shared pages read-only; take each write fault now
    // rather than in the first sample.
    for (size_t off = 0; off < m->size; off += PAGE_SIZE) {
      static_cast<volatile char*>(m->buffer)[off] = m->buffer[off];
      static_cast<volatile char*>(m->scratch)[off] = m->scratch[off];
    }
  } else {
    m->buffer = map_streaming(BENCH_SIZE);
    m->scratch = map_streaming(BENCH_SIZE);
    fill_pattern(m->buffer, BENCH_SIZE);
  }
  describe_pages(m);
  return m;
}

std::map<std::string, std::string>& baselines() {
  static std::map<std::string, std::string> map;
  return map;
}

}  // namespace

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "iov-bench: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

void restore_pattern(bench_memory& m) {
  fill_pattern(m.buffer, pattern_bytes(m.kind));
}

void describe_pages(bench_memory* m) {
  static_assert(BENCH_QUEUE_SLOTS == FOLIO_BATCH_SIZE, "a folio_queue segment's slots");
  const size_t nr_pages = m->size / PAGE_SIZE;
  for (size_t i = 0; i < nr_pages; i++) {
    char* pg = m->buffer + i * PAGE_SIZE;
    m->iovecs.add_vec(pg, PAGE_SIZE);
    m->bvecs.add_bvec(virt_to_page(pg), PAGE_SIZE, 0);
    m->bvecqs.add_bvec(virt_to_page(pg), PAGE_SIZE, 0);
    m->folioqs.add_folio(page_folio(virt_to_page(pg)));
    m->pages.store_page(i, virt_to_page(pg));
    m->page_pieces.emplace_back(i * PAGE_SIZE, PAGE_SIZE);
  }
  // The queue segments point into the builder's bvecs rather than holding their own.
  m->bvecqs.queue_bvecs(std::vector<unsigned>((nr_pages + BENCH_QUEUE_SLOTS - 1) / BENCH_QUEUE_SLOTS,
                                              BENCH_QUEUE_SLOTS),
                        0, true);
  // iov_kunit_benchmark_kvec: equal parts, the remainder in the last one.
  size_t part = m->size / BENCH_KVECS;
  for (size_t i = 0; i < BENCH_KVECS; i++) {
    size_t len = part + (i == BENCH_KVECS - 1 ? m->size - part * BENCH_KVECS : 0);
    m->kvecs.add_vec(m->buffer + i * part, len);
    m->kvec_pieces.emplace_back(i * part, len);
  }
}

void arm_copy_probes(const char* from, char* to, size_t size) {
  for (size_t off : probe_offsets(size))
    for (size_t k = 0; k < PAGE_SIZE; k++)
      to[off + k] = static_cast<char>(~from[off + k]);
}

bool copy_probes_hold(const char* from, const char* to, size_t size) {
  for (size_t off : probe_offsets(size))
    if (std::memcmp(from + off, to + off, PAGE_SIZE) != 0)
      return false;
  return true;
}

const char* memory_suffix(memory_kind kind) {
  switch (kind) {
    case memory_kind::tiled: return "";
    case memory_kind::streaming: return "_streaming";
    case memory_kind::l1: return "_l1";
  }
  return "";
}

namespace {
std::set<std::string>& l1_cases() {
  static std::set<std::string> names;
  return names;
}
}  // namespace

void note_l1_case(const std::string& name) { l1_cases().insert(name); }
bool is_l1_case(const std::string& name) { return l1_cases().count(name) != 0; }

void set_tile_size(size_t bytes) { g_tile = bytes; }
size_t tile_size() { return g_tile; }

bench_memory& get_memory(memory_kind kind) {
  static bench_memory* slots[3] = {};
  bench_memory*& slot = slots[static_cast<int>(kind)];
  if (!slot)
    slot = create_memory(kind);
  return *slot;
}

const char* case_name(bench_case c) {
  switch (c) {
    case bench_case::ubuf: return "ubuf";
    case bench_case::iovec: return "iovec";
    case bench_case::kvec: return "kvec";
    case bench_case::bvec: return "bvec";
    case bench_case::bvec_split: return "bvec_split";
    case bench_case::xarray: return "xarray";
    case bench_case::xarray_to_bvec: return "xarray_to_bvec";
    case bench_case::bvecq: return "bvecq";
    case bench_case::folioq: return "folioq";
  }
  return "?";
}

benchmark::internal::Benchmark* register_sampled(const std::string& name,
                                                 std::function<void(benchmark::State&)> fn) {
  return benchmark::RegisterBenchmark(name.c_str(), [fn = std::move(fn)](benchmark::State& state) { fn(state); })
      ->Iterations(1)
      ->Repetitions(BENCH_SAMPLES)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

void expect_bytes(benchmark::State& state, size_t got, size_t want) {
  if (got != want) {
    std::string msg = "processed " + std::to_string(got) + " bytes, expected " + std::to_string(want);
    state.SkipWithError(msg.c_str());
    return;
  }
  state.SetBytesProcessed(static_cast<int64_t>(want) * state.iterations());
  state.counters["bytes"] = static_cast<double>(want);  // per iteration, for the summary's GB/s
}

void set_baseline(const std::string& group, const std::string& baseline_name) {
  baselines()[group] = baseline_name;
}

std::string baseline_for(const std::string& group) {
  auto it = baselines().find(group);
  return it == baselines().end() ? std::string() : it->second;
}

}  // namespace iov::bench
