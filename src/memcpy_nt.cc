// memcpy_nt.cc: the non-temporal copy kernels behind memcpy_nt() and
// memcpy_nt_batch — SSE2, AVX2 and AVX-512 streaming stores on x86-64, memcpy
// elsewhere — chosen once at run time by measurement (simd_level.hpp).
//
//   iov::internal::memcpy_nt(dst, src, 1 << 20);
//   iov::internal::memcpy_nt_fence();
//
// One driver (copy_pieces) serves every level; only the loop that moves whole
// 64-byte lines differs. Loads are unaligned: a source piece may start anywhere.
#include "iov/internal/memcpy_nt.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define IOV_MEMCPY_NT_X86 1
#endif

namespace iov::internal {
namespace {

using u8 = unsigned char;

constexpr size_t kLine = 64;
constexpr size_t kPageLines = 4096 / kLine;

// Copies the partial lines at the ends of a piece's destination with memcpy;
// leaves d/s at the first whole line and returns how many whole lines follow.
inline size_t copy_ends(const nt_piece& p, u8** d, const u8** s) {
  *d = static_cast<u8*>(p.dst);
  *s = static_cast<const u8*>(p.src);
  size_t head = (kLine - (reinterpret_cast<uintptr_t>(*d) & (kLine - 1))) & (kLine - 1);
  head = head < p.len ? head : p.len;
  size_t lines = (p.len - head) / kLine;
  size_t body = lines * kLine;
  std::memcpy(*d, *s, head);
  std::memcpy(*d + head + body, *s + head + body, p.len - head - body);
  *d += head;
  *s += head;
  return lines;
}

// The line-copying loop of one instruction set: Lines::run<N>(d, s, lines)
// streams `lines` whole lines from each of N sources to N 64-byte aligned
// destinations, interleaved, U lines of each per round.
template <class Lines>
void copy_pieces(const nt_piece* pieces, unsigned n) {
  u8* d[MEMCPY_NT_STREAMS];
  const u8* s[MEMCPY_NT_STREAMS];
  size_t lines[MEMCPY_NT_STREAMS];
  size_t common = SIZE_MAX;
  for (unsigned k = 0; k < n; k++) {
    lines[k] = copy_ends(pieces[k], &d[k], &s[k]);
    common = lines[k] < common ? lines[k] : common;
  }
  if (n > 1 && common > 0) {
    switch (n) {
      case 2: Lines::template run<2>(d, s, common); break;
      case 3: Lines::template run<3>(d, s, common); break;
      default: Lines::template run<4>(d, s, common); break;
    }
    for (unsigned k = 0; k < n; k++) {
      d[k] += common * kLine;
      s[k] += common * kLine;
      lines[k] -= common;
    }
  }
  // What is left of each piece (all of a lone piece): its pages four at a
  // time, interleaved, then the rest as one stream.
  for (unsigned k = 0; k < n; k++) {
    u8* dd = d[k];
    const u8* ss = s[k];
    size_t left = lines[k];
    for (; left >= 4 * kPageLines; left -= 4 * kPageLines, dd += 4 * 4096, ss += 4 * 4096) {
      u8* d4[4] = {dd, dd + 4096, dd + 2 * 4096, dd + 3 * 4096};
      const u8* s4[4] = {ss, ss + 4096, ss + 2 * 4096, ss + 3 * 4096};
      Lines::template run<4>(d4, s4, kPageLines);
    }
    if (left != 0) Lines::template run<1>(&dd, &ss, left);
  }
}

// Rounds of U lines per stream: 8 lines in flight when interleaving, and 4
// for a lone stream, to keep the store buffer's write-combining full.
template <int N>
constexpr size_t kRound = N == 1 ? 4 : N == 2 ? 4 : 2;

#ifdef IOV_MEMCPY_NT_X86

// Each round prefetches the lines of its streams' sources 1 KiB ahead: the
// hardware's prefetchers stop at each 4 KiB page. On AMD Zen 5, against one
// flat memcpy of 256 MiB (the C library's own non-temporal copy), 256 MiB in
// 4 KiB pieces four at a time, medians of nine in a loop of our own: avx2
// 1.03-1.09x without, 0.96 with (256 bytes ahead 1.01, 2 KiB 1.02, 4 KiB
// 1.04; the NTA hint 1.00-1.03), avx512 1.08-1.15x without, 0.97-1.00 with.
// In iov-bench's copy_nocache_bvec_streaming (three runs each): avx2
// 1.09-1.13 -> 1.05-1.09, sse2 1.29-1.34 -> 1.15-1.23, avx512 1.05-1.20 ->
// 1.09-1.13.
constexpr size_t kPrefetchAhead = 1024;

// The rounds are unrolled completely (N and U are constants) so the vectors
// stay in registers.
#define IOV_NT_ROUNDS(LOAD_LINE, STORE_LINE, V, PER_LINE)                           \
  constexpr size_t U = kRound<N>;                                                    \
  u8* dl[N];                                                                         \
  const u8* sl[N];                                                                   \
  _Pragma("GCC unroll 8") for (int p = 0; p < N; p++) {                              \
    dl[p] = d[p];                                                                    \
    sl[p] = s[p];                                                                    \
  }                                                                                  \
  size_t k = 0;                                                                      \
  for (; k + U <= lines; k += U) {                                                   \
    _Pragma("GCC unroll 8") for (int p = 0; p < N; p++)                              \
      _Pragma("GCC unroll 8") for (size_t u = 0; u < U; u++)                         \
        _mm_prefetch(reinterpret_cast<const char*>(sl[p] + (k + u) * kLine + kPrefetchAhead), _MM_HINT_T0); \
    V v[N][U * PER_LINE];                                                            \
    _Pragma("GCC unroll 8") for (int p = 0; p < N; p++)                              \
      _Pragma("GCC unroll 8") for (size_t u = 0; u < U; u++)                         \
        LOAD_LINE(v[p] + u * PER_LINE, sl[p] + (k + u) * kLine);                     \
    _Pragma("GCC unroll 8") for (int p = 0; p < N; p++)                              \
      _Pragma("GCC unroll 8") for (size_t u = 0; u < U; u++)                         \
        STORE_LINE(dl[p] + (k + u) * kLine, v[p] + u * PER_LINE);                    \
  }                                                                                  \
  for (; k < lines; k++)                                                             \
    _Pragma("GCC unroll 8") for (int p = 0; p < N; p++) {                            \
      V v[PER_LINE];                                                                 \
      LOAD_LINE(v, sl[p] + k * kLine);                                               \
      STORE_LINE(dl[p] + k * kLine, v);                                              \
    }

struct sse2_lines {
  static inline void load(__m128i* v, const u8* s) {
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s) + i);
  }
  static inline void store(u8* d, const __m128i* v) {
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) _mm_stream_si128(reinterpret_cast<__m128i*>(d) + i, v[i]);
  }
  template <int N>
  static void run(u8* const* d, const u8* const* s, size_t lines) {
    IOV_NT_ROUNDS(load, store, __m128i, 4)
  }
};

struct avx2_lines {
  __attribute__((target("avx2"))) static inline void load(__m256i* v, const u8* s) {
    v[0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    v[1] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s) + 1);
  }
  __attribute__((target("avx2"))) static inline void store(u8* d, const __m256i* v) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), v[0]);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d) + 1, v[1]);
  }
  template <int N>
  __attribute__((target("avx2"))) static void run(u8* const* d, const u8* const* s, size_t lines) {
    IOV_NT_ROUNDS(load, store, __m256i, 2)
  }
};

struct avx512_lines {
  __attribute__((target("avx512f"))) static inline void load(__m512i* v, const u8* s) {
    v[0] = _mm512_loadu_si512(s);
  }
  __attribute__((target("avx512f"))) static inline void store(u8* d, const __m512i* v) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d), v[0]);
  }
  template <int N>
  __attribute__((target("avx512f"))) static void run(u8* const* d, const u8* const* s, size_t lines) {
    IOV_NT_ROUNDS(load, store, __m512i, 1)
  }
};

#undef IOV_NT_ROUNDS

#else

void copy_pieces_plain(const nt_piece* pieces, unsigned n) {
  for (unsigned k = 0; k < n; k++) std::memcpy(pieces[k].dst, pieces[k].src, pieces[k].len);
}

#endif  // IOV_MEMCPY_NT_X86

memcpy_nt_fn kernel_of(simd_level l) {
#ifdef IOV_MEMCPY_NT_X86
  return l == simd_level::avx512 ? copy_pieces<avx512_lines>
         : l == simd_level::avx2 ? copy_pieces<avx2_lines>
                                 : copy_pieces<sse2_lines>;
#else
  (void)l;
  return copy_pieces_plain;
#endif
}

void install(simd_level l) { memcpy_nt_impl.store(kernel_of(l), std::memory_order_relaxed); }

// The trial: a batch of four 4 KiB pages, the walk's case, fenced, so the
// time includes the stores' drain to memory.
uint32_t trial(simd_level l) {
  constexpr size_t kPage = 4096;
  struct buffers {
    alignas(kPage) u8 src[MEMCPY_NT_STREAMS * kPage];
    alignas(kPage) u8 dst[MEMCPY_NT_STREAMS * kPage];
  };
  static buffers* b = [] {  // kept until exit; only the choice uses it, under its lock
    auto* p = new buffers;
    std::memset(p, 1, sizeof *p);
    return p;
  }();
  nt_piece pieces[MEMCPY_NT_STREAMS];
  for (unsigned k = 0; k < MEMCPY_NT_STREAMS; k++) pieces[k] = {b->dst + k * kPage, b->src + k * kPage, kPage};
  const memcpy_nt_fn copy = kernel_of(l);
  const uint64_t t0 = simd_trial_clock_ns();
  copy(pieces, MEMCPY_NT_STREAMS);
  memcpy_nt_fence();
  return static_cast<uint32_t>(simd_trial_clock_ns() - t0);
}

constinit simd_dispatch<install, trial> dispatch;

void memcpy_nt_resolve(const nt_piece* pieces, unsigned n) {
  dispatch.resolve();
  memcpy_nt_impl.load(std::memory_order_relaxed)(pieces, n);
}

}  // namespace

constinit std::atomic<memcpy_nt_fn> memcpy_nt_impl{memcpy_nt_resolve};

bool memcpy_nt_select(simd_level l) { return dispatch.select(l); }
simd_level memcpy_nt_level() { return dispatch.level(); }
simd_choice memcpy_nt_choice() { return dispatch.choice(); }
simd_choice memcpy_nt_choose() { return dispatch.choose(); }

}  // namespace iov::internal
