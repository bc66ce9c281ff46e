// outofline.hpp: every operation run through generic_iterate() instead of an
// inline walk — the same body as the public function (internal/walk.hpp),
// with generic_walk passed. The benchmarks compare these with the inline
// forms, and the tests check that both give the same results.
//
//   size_t n = iov::internal::outofline::copy_from_iter(dst, len, &it);
#pragma once

#include <cstddef>
#include <cstdint>

#include "iov/copy.hpp"
#include "iov/copy_nocache.hpp"
#include "iov/crc32c.hpp"
#include "iov/internal/walk.hpp"
#include "iov/zero_scan.hpp"

namespace iov::internal::outofline {

inline size_t copy_to_iter(const void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_to_iter<generic_walk>(addr, bytes, i);
}
inline size_t copy_from_iter(void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_from_iter<generic_walk>(addr, bytes, i);
}
inline bool copy_to_iter_full(const void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_to_iter_full<generic_walk>(addr, bytes, i);
}
inline bool copy_from_iter_full(void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_from_iter_full<generic_walk>(addr, bytes, i);
}
inline size_t copy_page_to_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  return internal::copy_page_to_iter<generic_walk>(pg, offset, bytes, i);
}
inline size_t copy_page_from_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
  return internal::copy_page_from_iter<generic_walk>(pg, offset, bytes, i);
}
inline size_t iov_iter_zero(size_t bytes, iov_iter* i) { return internal::iov_iter_zero<generic_walk>(bytes, i); }
inline size_t copy_from_iter_nocache(void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_from_iter_nocache<generic_walk>(addr, bytes, i);
}
inline bool copy_from_iter_full_nocache(void* addr, size_t bytes, iov_iter* i) {
  return internal::copy_from_iter_full_nocache<generic_walk>(addr, bytes, i);
}
inline size_t copy_page_to_iter_nofault(page* pg, unsigned offset, size_t bytes, iov_iter* i) {
  return internal::copy_page_to_iter_nofault<generic_walk>(pg, offset, bytes, i);
}
inline size_t crc32c_iter(iov_iter* i, size_t bytes, uint32_t* crc) {
  return internal::crc32c_iter<generic_walk>(i, bytes, crc);
}
inline size_t crc32c_and_copy_to_iter(const void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  return internal::crc32c_and_copy_to_iter<generic_walk>(addr, bytes, crc, i);
}
inline size_t crc32c_and_copy_from_iter(void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
  return internal::crc32c_and_copy_from_iter<generic_walk>(addr, bytes, crc, i);
}
inline bool iov_iter_is_zero(const iov_iter* i, size_t bytes) {
  return internal::iov_iter_is_zero<generic_walk>(i, bytes);
}
inline size_t iov_iter_skip_zeroes(iov_iter* i, size_t bytes) {
  return internal::iov_iter_skip_zeroes<generic_walk>(i, bytes);
}

}  // namespace iov::internal::outofline
