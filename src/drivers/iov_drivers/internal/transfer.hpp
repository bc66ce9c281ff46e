// transfer.hpp: moving bytes between a driver's page and a request's iterator,
// in the six forms the drivers can be set to (blkdev.hpp's copy_mode and
// iteration_mode), so that the kernel's conversions can be measured:
//
//   blk_dispatch(dev.get_copy_mode(), dev.get_iteration(), [&](auto copier) {
//     using C = decltype(copier);
//     C::page_to_iter(pg, offset, len, rq.iter);   // a read of one page piece
//   });
//
// modern: each step calls memcpy_from_page / memcpy_to_page / memset_page on
// the piece, as the kernel's drivers do since the kmap_local conversion.
// legacy: the driver's page is mapped once with kmap_local_page and the steps
// are plain memcpy/memset, as before it. nocache: modern, but a write goes
// into the page through copy_from_iter_nocache (streaming stores).
// The iteration mode picks the walk (iov/walk.hpp) that drives the steps and
// the library's operations alike: inlined, iov::inline_walk
// (iterate_and_advance2 with the step inlined); outofline, iov::pointer_walk
// (generic_iterate calling the same step through a function pointer). Each
// function returns the bytes processed; a short count means the iterator
// ended (an XARRAY hole).
#pragma once

#include <cstddef>
#include <cstring>

#include "iov/copy_nocache.hpp"
#include "iov/highmem.hpp"
#include "iov/page.hpp"
#include "iov/walk.hpp"
#include "iov/zero_scan.hpp"
#include "iov_drivers/blkdev.hpp"

namespace iov::drivers::internal {

// What a modern step needs to reach the driver's page.
struct page_piece {
  page* pg;
  size_t offset;
};

// The steps. priv is the driver side: a page_piece (modern), a mapped address
// (legacy) or the fill byte (fill); base + len is the iterator's piece.
inline size_t blk_modern_from_page_step(void* base, size_t progress, size_t len, void* priv, void*) {
  auto* p = static_cast<page_piece*>(priv);
  memcpy_from_page(static_cast<char*>(base), p->pg, p->offset + progress, len);
  return 0;
}
inline size_t blk_modern_to_page_step(void* base, size_t progress, size_t len, void* priv, void*) {
  auto* p = static_cast<page_piece*>(priv);
  memcpy_to_page(p->pg, p->offset + progress, static_cast<const char*>(base), len);
  return 0;
}
inline size_t blk_legacy_from_page_step(void* base, size_t progress, size_t len, void* priv, void*) {
  std::memcpy(base, static_cast<const char*>(priv) + progress, len);
  return 0;
}
inline size_t blk_legacy_to_page_step(void* base, size_t progress, size_t len, void* priv, void*) {
  std::memcpy(static_cast<char*>(priv) + progress, base, len);
  return 0;
}
// memset_page works on one frame: a kvec or ubuf piece may span several.
inline size_t blk_modern_fill_step(void* base, size_t, size_t len, void* priv, void*) {
  int c = *static_cast<const int*>(priv);
  char* p = static_cast<char*>(base);
  while (len) {
    size_t off = offset_in_page(p), n = std::min(len, PAGE_SIZE - off);
    memset_page(virt_to_page(p), off, c, n);
    p += n;
    len -= n;
  }
  return 0;
}
inline size_t blk_legacy_fill_step(void* base, size_t, size_t len, void* priv, void*) {
  std::memset(base, *static_cast<const int*>(priv), len);
  return 0;
}

// One step for both kinds of piece, over the walk W.
template <Walk W, iov_step_f Step>
IOV_ALWAYS_INLINE size_t blk_walk(iov_iter* it, size_t len, void* priv) {
  return W::template run<steps<Step, Step>>(it, len, priv, nullptr);
}

template <copy_mode M, Walk W>
struct blk_copier {
  static constexpr copy_mode mode = M;
  using ops = operations_over<W>;

  // len bytes of pg from offset into the iterator (a read).
  static size_t page_to_iter(page* pg, size_t offset, size_t len, iov_iter* it) {
    return page_walk<blk_modern_from_page_step, blk_legacy_from_page_step>(pg, offset, len, it);
  }

  // len bytes of the iterator into pg from offset (a write).
  static size_t iter_to_page(page* pg, size_t offset, size_t len, iov_iter* it) {
    if constexpr (M == copy_mode::nocache) {
      return ops::copy_from_iter_nocache(static_cast<char*>(page_address(pg)) + offset, len, it);
    } else {
      return page_walk<blk_modern_to_page_step, blk_legacy_to_page_step>(pg, offset, len, it);
    }
  }

  // len bytes of c into the iterator (a read of what the device does not store).
  static size_t fill_iter(int c, size_t len, iov_iter* it) {
    if constexpr (M != copy_mode::legacy)
      return blk_walk<W, blk_modern_fill_step>(it, len, &c);
    else
      return blk_walk<W, blk_legacy_fill_step>(it, len, &c);
  }

  // len bytes of c into pg from offset.
  static void fill_page(page* pg, size_t offset, int c, size_t len) {
    if constexpr (M != copy_mode::legacy) {
      memset_page(pg, offset, c, len);
    } else {
      char* kaddr = static_cast<char*>(kmap_local_page(pg));
      std::memset(kaddr + offset, c, len);
      kunmap_local(kaddr);
    }
  }

  // Are the next len bytes of the iterator zero? Does not advance.
  static bool iter_is_zero(const iov_iter* it, size_t len) {
    return ops::iov_iter_is_zero(it, len);
  }

 private:
  // A walk of len bytes of the iterator against pg from offset, one direction's
  // step: the modern one gets the page and offset, the legacy one the address
  // kmap_local_page gave.
  template <iov_step_f ModernStep, iov_step_f LegacyStep>
  IOV_ALWAYS_INLINE static size_t page_walk(page* pg, size_t offset, size_t len, iov_iter* it) {
    if constexpr (M != copy_mode::legacy) {
      page_piece p{pg, offset};
      return blk_walk<W, ModernStep>(it, len, &p);
    } else {
      char* kaddr = static_cast<char*>(kmap_local_page(pg));
      size_t n = blk_walk<W, LegacyStep>(it, len, kaddr + offset);
      kunmap_local(kaddr);
      return n;
    }
  }
};

// Calls f(blk_copier<M, W>{}) for the settings: one switch per request, and a
// loop compiled for each of the six forms.
template <copy_mode M, class F>
IOV_ALWAYS_INLINE decltype(auto) blk_dispatch_iteration(iteration_mode i, F&& f) {
  if (i == iteration_mode::inlined) return f(blk_copier<M, inline_walk>{});
  return f(blk_copier<M, pointer_walk>{});
}
template <class F>
IOV_ALWAYS_INLINE decltype(auto) blk_dispatch(copy_mode m, iteration_mode i, F&& f) {
  if (m == copy_mode::nocache) return blk_dispatch_iteration<copy_mode::nocache>(i, f);
  if (m == copy_mode::modern) return blk_dispatch_iteration<copy_mode::modern>(i, f);
  return blk_dispatch_iteration<copy_mode::legacy>(i, f);
}

}  // namespace iov::drivers::internal
