// copy_nocache.hpp: copies whose stores bypass the cache — for data written
// once and not read again soon, where cached stores would evict the working
// set and spend bandwidth on reading the destination first:
//   copy_from_iter_nocache()  out of an iterator (the kernel's), as a block
//                             driver fills its backing store
//   copy_to_iter_nocache()    into an iterator (the library's own: the kernel
//                             has no such call), as a server receives a
//                             payload into pages it hands on unread
//
//   iov::iov_iter it;
//   iov::iov_iter_bvec(&it, iov::ITER_SOURCE, bvecs, nr, total);
//   size_t n = iov::copy_from_iter_nocache(backing + pos, total, &it);
//
// Pieces of at least internal::MEMCPY_NT_MIN bytes are copied with streaming
// stores, page-sized ones four at a time interleaved (internal/memcpy_nt.hpp),
// and the call fences once before returning (the kernel fences each piece);
// shorter pieces are copied with memcpy. The fence waits for the streamed
// lines to reach memory, so one call per page costs about twice one call
// per many pages: batch pages into one iterator where possible.
// As copy_from_iter() and copy_to_iter(): 0 and no change on an iterator of
// the wrong direction, the count is clamped, and an injected user-copy fault
// stops it short.
#pragma once

#ifdef IOV_HEADER_ONLY
#error "iov/copy_nocache.hpp needs the compiled library (run-time SIMD dispatch): link iov::iov (pkg-config iov), not iov::headers (iov-headers)"
#include "iov: link iov::iov"
#endif

#include <cstddef>

#include "iov/config.hpp"
#include "iov/internal/fault_inject.hpp"
#include "iov/internal/memcpy_nt.hpp"
#include "iov/internal/walk.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"
#include "iov/position.hpp"
#include "iov/rcu.hpp"

namespace iov {

namespace internal {
// The steps: priv is the destination, priv2 the memcpy_nt_batch that collects the pieces.
inline size_t memcpy_from_iter_nocache(void* iter_from, size_t progress, size_t len, void* to, void* batch) {
  static_cast<memcpy_nt_batch*>(batch)->add(static_cast<char*>(to) + progress, iter_from, len);
  return 0;
}
inline size_t copy_from_user_iter_nocache(void* iter_from, size_t progress, size_t len, void* to, void* batch) {
  size_t n = usercopy_allow(len);
  static_cast<memcpy_nt_batch*>(batch)->add(static_cast<char*>(to) + progress, iter_from, n);
  return len - n;
}

using copy_nocache_steps = steps<copy_from_user_iter_nocache, memcpy_from_iter_nocache>;

// The batch may still hold pieces when the walk returns: an XARRAY walk's
// pages are only safe inside an RCU read-side section, so for those the
// section spans the copy too.
template <Walk W>
inline size_t copy_from_iter_nocache(void* addr, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(!i->data_source))
    return 0;
  memcpy_nt_batch batch;
  if (IOV_UNLIKELY(iov_iter_is_xarray(i))) {
    rcu_read_guard rcu;
    size_t n = W::template run<copy_nocache_steps>(i, bytes, addr, &batch);
    batch.finish();
    return n;
  }
  size_t n = W::template run<copy_nocache_steps>(i, bytes, addr, &batch);
  batch.finish();
  return n;
}
}  // namespace internal

inline size_t copy_from_iter_nocache(void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_from_iter_nocache<internal::inline_walk>(addr, bytes, i);
}

// --- copy_to_iter_nocache() --------------------------------------------------

namespace internal {
// The steps: priv is the source, priv2 the memcpy_nt_batch.
inline size_t memcpy_to_iter_nocache(void* iter_to, size_t progress, size_t len, void* from, void* batch) {
  static_cast<memcpy_nt_batch*>(batch)->add(iter_to, static_cast<const char*>(from) + progress, len);
  return 0;
}
inline size_t copy_to_user_iter_nocache(void* iter_to, size_t progress, size_t len, void* from, void* batch) {
  size_t n = usercopy_allow(len);
  static_cast<memcpy_nt_batch*>(batch)->add(iter_to, static_cast<const char*>(from) + progress, n);
  return len - n;
}

using copy_to_nocache_steps = steps<copy_to_user_iter_nocache, memcpy_to_iter_nocache>;

// As copy_from_iter_nocache<W>: an XARRAY's pages stay in the RCU section
// until the batch is finished.
template <Walk W>
inline size_t copy_to_iter_nocache(const void* addr, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  memcpy_nt_batch batch;
  if (IOV_UNLIKELY(iov_iter_is_xarray(i))) {
    rcu_read_guard rcu;
    size_t n = W::template run<copy_to_nocache_steps>(i, bytes, const_cast<void*>(addr), &batch);
    batch.finish();
    return n;
  }
  size_t n = W::template run<copy_to_nocache_steps>(i, bytes, const_cast<void*>(addr), &batch);
  batch.finish();
  return n;
}
}  // namespace internal

// copy_to_iter() with streaming stores into the iterator's memory: for a
// destination nobody reads soon (pages handed to a device), where through the
// cache every line would first be read from memory. The library's own name,
// after copy_from_iter_nocache(); the kernel has no copy into an iterator
// that bypasses the cache. Where the iterator's pieces overlap, which of the
// copies reaches an overlapping byte last is not defined (the streams are
// interleaved).
inline size_t copy_to_iter_nocache(const void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_to_iter_nocache<internal::inline_walk>(addr, bytes, i);
}

// --- copy_from_iter_full_nocache() and copy_from_iter_flushcache() (uio.h) ---------

namespace internal {
template <Walk W>
inline bool copy_from_iter_full_nocache(void* addr, size_t bytes, iov_iter* i) {
  size_t copied = copy_from_iter_nocache<W>(addr, bytes, i);
  if (IOV_LIKELY(copied == bytes))
    return true;
  iov_iter_revert(i, copied);
  return false;
}
}  // namespace internal

// All or nothing: on a short copy the iterator is reverted and false returned.
[[nodiscard]] inline bool copy_from_iter_full_nocache(void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_from_iter_full_nocache<internal::inline_walk>(addr, bytes, i);
}

// The kernel's fallback where the architecture has no flushing user copy
// (!CONFIG_ARCH_HAS_UACCESS_FLUSHCACHE): copy_from_iter_nocache(). As the
// kernel warns, a caller that needs the destination flushed from the cache
// (persistent memory) must not assume it is.
inline size_t copy_from_iter_flushcache(void* addr, size_t bytes, iov_iter* i) {
  return copy_from_iter_nocache(addr, bytes, i);
}

}  // namespace iov
