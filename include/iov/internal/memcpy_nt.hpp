// memcpy_nt.hpp: copies whose stores bypass the cache (non-temporal), for data
// the CPU will not read again soon — the kernel's __copy_user_nocache, behind
// copy_from_iter_nocache() (copy_nocache.hpp).
//
// Streaming stores reach full memory bandwidth only when several streams, a
// page apart, are in flight at once (as glibc's large memcpy interleaves
// pages), so a walk over 4 KiB pieces collects them in a batch and copies
// four at a time, interleaved; the batch fences once at the end:
//
//   iov::internal::memcpy_nt_batch batch;
//   for (auto& piece : pieces) batch.add(dst + done, piece.base, piece.len);
//   batch.finish();   // copies what is pending, then sfence
//
// The kernels (SSE2, AVX2, AVX-512 streaming stores; memcpy elsewhere) live in
// src/memcpy_nt.cc, chosen once at run time by measurement (simd_level.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>

#include "iov/config.hpp"
#include "iov/internal/simd_level.hpp"

namespace iov::internal {

// Below this a piece is copied by plain memcpy: its destination shares cache
// lines with its neighbours anyway, and it is not worth a place in a batch.
inline constexpr size_t MEMCPY_NT_MIN = 256;
// Pieces copied at once, interleaved.
inline constexpr unsigned MEMCPY_NT_STREAMS = 4;
// From this size a piece is copied at once, on its own: it interleaves its own
// pages, and the pieces of a batch may be far apart (a kvec's 32 MiB segments)
// where their streams can meet in the same cache sets and write-combining buffers.
inline constexpr size_t MEMCPY_NT_ALONE = 4 * 4096;

struct nt_piece {
  void* dst;
  const void* src;
  size_t len;  // >= MEMCPY_NT_MIN
};

// Copies n (1..MEMCPY_NT_STREAMS) pieces: the partial 64-byte lines at either
// end of each destination with memcpy, so no line is written both through the
// cache and around it, and the whole lines between with streaming stores,
// interleaved across pieces (a single large piece is split into pages that
// are interleaved the same way). Unfenced.
using memcpy_nt_fn = void (*)(const nt_piece* pieces, unsigned n);

// Starts out at a resolver that chooses the level, installs its kernel and
// forwards.
extern std::atomic<memcpy_nt_fn> memcpy_nt_impl;

// Installs the kernel of level `l`; false (and no change) if the CPU lacks it.
// The portable level on x86-64 uses SSE2 streaming stores (always present).
bool memcpy_nt_select(simd_level l);
simd_level memcpy_nt_level();
// The choice made at first use: the level and each level's trial time.
simd_choice memcpy_nt_choice();
// Chooses again (under the current CPU cap and IOV_SIMD) and installs it.
simd_choice memcpy_nt_choose();

// Orders the streaming stores before every later store (sfence on x86).
IOV_ALWAYS_INLINE void memcpy_nt_fence() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// One contiguous copy with streaming stores; unfenced.
IOV_ALWAYS_INLINE void memcpy_nt(void* dst, const void* src, size_t len) {
  if (len < MEMCPY_NT_MIN) {
    std::memcpy(dst, src, len);
    return;
  }
  nt_piece p{dst, src, len};
  memcpy_nt_impl.load(std::memory_order_relaxed)(&p, 1);
}

// Collects pieces and copies them MEMCPY_NT_STREAMS at a time (a piece of
// MEMCPY_NT_ALONE bytes or more at once, on its own). A piece's copy may be
// deferred until a later add() or finish(): its source and destination must
// stay valid and unchanged until then.
class memcpy_nt_batch {
 public:
  memcpy_nt_batch() = default;
  memcpy_nt_batch(const memcpy_nt_batch&) = delete;
  memcpy_nt_batch& operator=(const memcpy_nt_batch&) = delete;

  IOV_ALWAYS_INLINE void add(void* dst, const void* src, size_t len) {
    if (len < MEMCPY_NT_MIN) {
      std::memcpy(dst, src, len);
      return;
    }
    if (len >= MEMCPY_NT_ALONE) {
      nt_piece p{dst, src, len};
      memcpy_nt_impl.load(std::memory_order_relaxed)(&p, 1);
      streamed_ = true;
      return;
    }
    pending_[n_++] = nt_piece{dst, src, len};
    if (n_ == MEMCPY_NT_STREAMS) flush();
  }
  // Copies what is pending (unfenced).
  IOV_ALWAYS_INLINE void flush() {
    if (n_ == 0) return;
    memcpy_nt_impl.load(std::memory_order_relaxed)(pending_, n_);
    n_ = 0;
    streamed_ = true;
  }
  // Copies what is pending and fences: every add() is then complete and ordered.
  IOV_ALWAYS_INLINE void finish() {
    flush();
    if (streamed_) memcpy_nt_fence();
    streamed_ = false;
  }

 private:
  nt_piece pending_[MEMCPY_NT_STREAMS];
  unsigned n_ = 0;
  bool streamed_ = false;
};

}  // namespace iov::internal
