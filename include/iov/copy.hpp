// copy.hpp: copying between memory and an iterator, and zero-filling one (the
// data half of the kernel's lib/iov_iter.c).
//
//   iov::iov_iter it;
//   iov::iov_iter_kvec(&it, iov::ITER_DEST, kv, 2, total);
//   size_t n = iov::copy_to_iter(buf, len, &it);   // n == min(len, total)
//
// A copy into an ITER_SOURCE iterator, or out of an ITER_DEST one, is the
// kernel's WARN_ON_ONCE: it copies nothing and returns 0 (and never aborts).
// Counts are clamped to the iterator, and, as in the kernel's
// check_copy_size(), the object's size is the caller's business. Each
// operation is one body over a walk (internal/walk.hpp).
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "iov/folio.hpp"
#include "iov/highmem.hpp"
#include "iov/internal/fault_inject.hpp"
#include "iov/internal/walk.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"
#include "iov/page.hpp"
#include "iov/position.hpp"

namespace iov {

namespace internal {
// The kernel's steps. User-backed steps go through usercopy_allow(), the
// fault-injection point. Every step's length goes through unbounded(), the
// user-backed ones' too: inlined where the caller's length is a constant (a
// one-page ubuf), memset(4096) became rep stosq in the inline form while the
// compiled-once form called the C library, so the two forms of one
// operation ran different code (docs/benchmarks.md, "The ubuf gap").
inline size_t copy_to_user_iter(void* iter_to, size_t progress, size_t len, void* from, void*) {
  size_t n = usercopy_allow(len);
  std::memcpy(iter_to, static_cast<const char*>(from) + progress, unbounded(n));
  return len - n;
}
inline size_t memcpy_to_iter(void* iter_to, size_t progress, size_t len, void* from, void*) {
  std::memcpy(iter_to, static_cast<const char*>(from) + progress, unbounded(len));
  return 0;
}
inline size_t copy_from_user_iter(void* iter_from, size_t progress, size_t len, void* to, void*) {
  size_t n = usercopy_allow(len);
  std::memcpy(static_cast<char*>(to) + progress, iter_from, unbounded(n));
  return len - n;
}
inline size_t memcpy_from_iter(void* iter_from, size_t progress, size_t len, void* to, void*) {
  std::memcpy(static_cast<char*>(to) + progress, iter_from, unbounded(len));
  return 0;
}
inline size_t zero_to_user_iter(void* iter_to, size_t, size_t len, void*, void*) {
  size_t n = usercopy_allow(len);
  std::memset(iter_to, 0, unbounded(n));
  return len - n;
}
inline size_t zero_to_iter(void* iter_to, size_t, size_t len, void*, void*) {
  std::memset(iter_to, 0, unbounded(len));
  return 0;
}

// The pairs, and each operation's one body; the public functions below run
// it with the inline walk, internal/outofline.hpp with the others.
using copy_to_iter_steps = steps<copy_to_user_iter, memcpy_to_iter>;
using copy_from_iter_steps = steps<copy_from_user_iter, memcpy_from_iter>;
using zero_steps = steps<zero_to_user_iter, zero_to_iter>;

template <Walk W>
IOV_ALWAYS_INLINE size_t copy_to_iter(const void* addr, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  return W::template run<copy_to_iter_steps>(i, bytes, const_cast<void*>(addr), nullptr);
}

template <Walk W>
IOV_ALWAYS_INLINE size_t copy_from_iter(void* addr, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(!i->data_source))
    return 0;
  return W::template run<copy_from_iter_steps>(i, bytes, addr, nullptr);
}

// All or nothing: on a short copy the iterator is reverted and false returned.
template <Walk W>
inline bool copy_to_iter_full(const void* addr, size_t bytes, iov_iter* i) {
  size_t copied = copy_to_iter<W>(addr, bytes, i);
  if (IOV_LIKELY(copied == bytes))
    return true;
  iov_iter_revert(i, copied);
  return false;
}

template <Walk W>
inline bool copy_from_iter_full(void* addr, size_t bytes, iov_iter* i) {
  size_t copied = copy_from_iter<W>(addr, bytes, i);
  if (IOV_LIKELY(copied == bytes))
    return true;
  iov_iter_revert(i, copied);
  return false;
}

// copy_page_{to,from}_iter: page by page from page + offset / PAGE_SIZE on, as
// within a kernel compound page (the caller vouches the frames are one
// allocation); stops at the first short copy.
template <class CopyPiece>
inline size_t copy_page_pieces(page* pg, size_t offset, size_t bytes, CopyPiece&& copy_piece) {
  size_t res = 0;
  pg += offset / PAGE_SIZE;
  offset %= PAGE_SIZE;
  while (bytes) {
    char* kaddr = static_cast<char*>(kmap_local_page(pg));
    size_t n = copy_piece(kaddr + offset, std::min(bytes, PAGE_SIZE - offset));
    kunmap_local(kaddr);
    res += n;
    bytes -= n;
    if (!n)
      break;
    offset += n;
    if (offset == PAGE_SIZE) {
      pg++;
      offset = 0;
    }
  }
  return res;
}

template <Walk W>
inline size_t copy_page_to_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  return copy_page_pieces(pg, offset, bytes, [i](char* from, size_t n) { return copy_to_iter<W>(from, n, i); });
}

template <Walk W>
inline size_t copy_page_from_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(!i->data_source))
    return 0;
  return copy_page_pieces(pg, offset, bytes, [i](char* to, size_t n) { return copy_from_iter<W>(to, n, i); });
}

// Zero-fills the next bytes of the iterator (no direction check, as the kernel's).
template <Walk W>
IOV_ALWAYS_INLINE size_t iov_iter_zero(size_t bytes, iov_iter* i) {
  return W::template run<zero_steps>(i, bytes, nullptr, nullptr);
}
}  // namespace internal

// The single-buffer case inlines into the caller as a bare memcpy; the other
// types share one out-of-line walk per operation (internal::ubuf_first_walk).
IOV_ALWAYS_INLINE size_t copy_to_iter(const void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_to_iter<internal::ubuf_first_walk>(addr, bytes, i);
}

IOV_ALWAYS_INLINE size_t copy_from_iter(void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_from_iter<internal::ubuf_first_walk>(addr, bytes, i);
}

[[nodiscard]] inline bool copy_to_iter_full(const void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_to_iter_full<internal::ubuf_first_walk>(addr, bytes, i);
}

[[nodiscard]] inline bool copy_from_iter_full(void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_from_iter_full<internal::ubuf_first_walk>(addr, bytes, i);
}

inline size_t copy_page_to_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  return internal::copy_page_to_iter<internal::ubuf_first_walk>(pg, offset, bytes, i);
}

inline size_t copy_page_from_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  return internal::copy_page_from_iter<internal::ubuf_first_walk>(pg, offset, bytes, i);
}
// The kernel's may not sleep on a fault; a user-space copy never does, so it
// is copy_page_from_iter().
inline size_t copy_page_from_iter_atomic(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  return copy_page_from_iter(pg, offset, bytes, i);
}

IOV_ALWAYS_INLINE size_t iov_iter_zero(size_t bytes, iov_iter* i) {
  return internal::iov_iter_zero<internal::ubuf_first_walk>(bytes, i);
}

// uio.h's folio forms: the folio's frames are contiguous, so the page forms
// run across them.
inline size_t copy_folio_to_iter(folio* f, size_t offset, size_t bytes, iov_iter* i) {
  return copy_page_to_iter(&f->page, offset, bytes, i);
}

inline size_t copy_folio_from_iter(folio* f, size_t offset, size_t bytes, iov_iter* i) {
  return copy_page_from_iter(&f->page, offset, bytes, i);
}

// lib/iov_iter.c: a range beyond the folio, or an ITER_DEST iterator, is the
// kernel's WARN: nothing is copied. (Atomic: it never sleeps, which every copy
// here is anyway.)
inline size_t copy_folio_from_iter_atomic(folio* f, size_t offset, size_t bytes, iov_iter* i) {
  size_t size = folio_size(f);
  if (IOV_UNLIKELY(offset > size || bytes > size - offset) || IOV_UNLIKELY(!i->data_source))
    return 0;
  return copy_from_iter(static_cast<char*>(folio_address(f)) + offset, bytes, i);
}

// --- copy_page_to_iter_nofault() and copy_mc_to_iter() (uio.h, lib/iov_iter.c) ---

namespace internal {
// The kernel's copy_to_user_iter_nofault(): copy_to_user_nofault() is all or
// nothing, so a piece whose memory cannot be written is left whole, and the
// walk ends there. User space cannot disable page faults; the copy goes through
// process_vm_writev() on this process, which reports an unwritable range
// (EFAULT) instead of faulting. Where that call is refused (a seccomp filter)
// the piece is copied as copy_to_user_iter() does.
inline size_t copy_to_user_iter_nofault(void* iter_to, size_t progress, size_t len, void* from, void*) {
  if (usercopy_allow(len) != len)
    return len;
  ::iovec local = {static_cast<char*>(from) + progress, len}, remote = {iter_to, len};
  ssize_t n = ::process_vm_writev(::getpid(), &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(len))
    return 0;
  if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
    std::memcpy(iter_to, local.iov_base, len);
    return 0;
  }
  return len;
}

using copy_to_iter_nofault_steps = steps<copy_to_user_iter_nofault, memcpy_to_iter>;

template <Walk W>
inline size_t copy_page_to_iter_nofault(page* pg, unsigned offset, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  return copy_page_pieces(pg, offset, bytes, [i](char* from, size_t n) {
    return W::template run<copy_to_iter_nofault_steps>(i, n, from, nullptr);
  });
}
}  // namespace internal

// copy_page_to_iter() for callers that may not fault (the kernel's runs with
// page faults disabled): a user-backed piece that cannot be written ends the
// copy short, having copied none of that piece.
inline size_t copy_page_to_iter_nofault(page* pg, unsigned offset, size_t bytes, iov_iter* i) {
  return internal::copy_page_to_iter_nofault<internal::inline_walk>(pg, offset, bytes, i);
}

// User space sees no machine checks: copy_to_iter(), as the kernel's without
// CONFIG_ARCH_HAS_COPY_MC.
IOV_ALWAYS_INLINE size_t copy_mc_to_iter(const void* addr, size_t bytes, iov_iter* i) {
  return copy_to_iter(addr, bytes, i);
}

}  // namespace iov
