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
// check_copy_size(), the object's size is the caller's business. Each copy has
// an *_outofline twin: the same steps through generic_iterate().
#pragma once

#include <cstddef>
#include <cstring>

#include "iov/internal/fault_inject.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"
#include "iov/page.hpp"
#include "iov/position.hpp"

namespace iov {

namespace internal {
// The kernel's steps, with stable addresses for generic_iterate(). User-backed
// steps go through usercopy_allow(), the fault-injection point.
inline size_t copy_to_user_iter(void* iter_to, size_t progress, size_t len, void* from, void*) {
  size_t n = usercopy_allow(len);
  std::memcpy(iter_to, static_cast<const char*>(from) + progress, n);
  return len - n;
}
inline size_t memcpy_to_iter(void* iter_to, size_t progress, size_t len, void* from, void*) {
  std::memcpy(iter_to, static_cast<const char*>(from) + progress, unbounded(len));
  return 0;
}
inline size_t copy_from_user_iter(void* iter_from, size_t progress, size_t len, void* to, void*) {
  size_t n = usercopy_allow(len);
  std::memcpy(static_cast<char*>(to) + progress, iter_from, n);
  return len - n;
}
inline size_t memcpy_from_iter(void* iter_from, size_t progress, size_t len, void* to, void*) {
  std::memcpy(static_cast<char*>(to) + progress, iter_from, unbounded(len));
  return 0;
}
inline size_t zero_to_user_iter(void* iter_to, size_t, size_t len, void*, void*) {
  size_t n = usercopy_allow(len);
  std::memset(iter_to, 0, n);
  return len - n;
}
inline size_t zero_to_iter(void* iter_to, size_t, size_t len, void*, void*) {
  std::memset(iter_to, 0, unbounded(len));
  return 0;
}
}  // namespace internal

namespace internal {
// The walks of the types other than UBUF, kept out of the callers' bodies so
// that the common single-buffer case inlines into them as a bare memcpy (the
// kernel splits copy_to_iter() from _copy_to_iter() for the same reason).
IOV_NOINLINE inline size_t copy_to_iter_walk(const void* addr, size_t bytes, iov_iter* i) {
  return iterate_and_advance(i, bytes, const_cast<void*>(addr), copy_to_user_iter, memcpy_to_iter);
}
IOV_NOINLINE inline size_t copy_from_iter_walk(void* addr, size_t bytes, iov_iter* i) {
  return iterate_and_advance(i, bytes, addr, copy_from_user_iter, memcpy_from_iter);
}
}  // namespace internal

IOV_ALWAYS_INLINE size_t copy_to_iter(const void* addr, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  if (IOV_LIKELY(iter_is_ubuf(i)))
    return iterate_ubuf(i, bytes, const_cast<void*>(addr), nullptr, internal::copy_to_user_iter);
  return internal::copy_to_iter_walk(addr, bytes, i);
}

IOV_ALWAYS_INLINE size_t copy_from_iter(void* addr, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(!i->data_source))
    return 0;
  if (IOV_LIKELY(iter_is_ubuf(i)))
    return iterate_ubuf(i, bytes, addr, nullptr, internal::copy_from_user_iter);
  return internal::copy_from_iter_walk(addr, bytes, i);
}

inline size_t copy_to_iter_outofline(const void* addr, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  return generic_iterate(i, bytes, const_cast<void*>(addr), nullptr, internal::copy_to_user_iter,
                         internal::memcpy_to_iter);
}

inline size_t copy_from_iter_outofline(void* addr, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(!i->data_source))
    return 0;
  return generic_iterate(i, bytes, addr, nullptr, internal::copy_from_user_iter, internal::memcpy_from_iter);
}

// All or nothing: on a short copy the iterator is reverted and false returned.
[[nodiscard]] inline bool copy_to_iter_full(const void* addr, size_t bytes, iov_iter* i) {
  size_t copied = copy_to_iter(addr, bytes, i);
  if (IOV_LIKELY(copied == bytes))
    return true;
  iov_iter_revert(i, copied);
  return false;
}

[[nodiscard]] inline bool copy_from_iter_full(void* addr, size_t bytes, iov_iter* i) {
  size_t copied = copy_from_iter(addr, bytes, i);
  if (IOV_LIKELY(copied == bytes))
    return true;
  iov_iter_revert(i, copied);
  return false;
}

namespace internal {
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
}  // namespace internal

inline size_t copy_page_to_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(i->data_source))
    return 0;
  return internal::copy_page_pieces(pg, offset, bytes,
                                    [i](char* from, size_t n) { return copy_to_iter(from, n, i); });
}

inline size_t copy_page_from_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  if (IOV_UNLIKELY(!i->data_source))
    return 0;
  return internal::copy_page_pieces(pg, offset, bytes,
                                    [i](char* to, size_t n) { return copy_from_iter(to, n, i); });
}

namespace internal {
IOV_NOINLINE inline size_t iov_iter_zero_walk(size_t bytes, iov_iter* i) {
  return iterate_and_advance(i, bytes, nullptr, zero_to_user_iter, zero_to_iter);
}
}  // namespace internal

// Zero-fills the next bytes of the iterator (no direction check, as the
// kernel's); the UBUF case inlines, as in copy_to_iter().
IOV_ALWAYS_INLINE size_t iov_iter_zero(size_t bytes, iov_iter* i) {
  if (IOV_LIKELY(iter_is_ubuf(i)))
    return iterate_ubuf(i, bytes, nullptr, nullptr, internal::zero_to_user_iter);
  return internal::iov_iter_zero_walk(bytes, i);
}

inline size_t iov_iter_zero_outofline(size_t bytes, iov_iter* i) {
  return generic_iterate(i, bytes, nullptr, nullptr, internal::zero_to_user_iter, internal::zero_to_iter);
}

}  // namespace iov
