// outofline.hpp: every operation over a walk other than its public
// function's, for the benchmarks (which compare the forms with the inline
// ones) and the tests (which hold all forms to the same results):
//   outofline  the compiled-once walk (outofline_walk): one instance per pair
//              of steps in the src/ file named after the operation's header,
//              the steps inlined in it, reached by a direct call
//   pointer    the pointer walk (pointer_walk): generic_iterate(), the steps
//              called through their pointers
//
//   size_t n = iov::internal::outofline::copy_from_iter(dst, len, &it);
//   size_t m = iov::internal::pointer::copy_from_iter(dst, len, &it);
#pragma once

#include <cstddef>
#include <cstdint>

#include "iov/copy.hpp"
#include "iov/copy_nocache.hpp"
#include "iov/crc32c.hpp"
#include "iov/internal/walk.hpp"
#include "iov/zero_scan.hpp"

namespace iov::internal {

// The operations of the library over the walk W, by their public names (the
// CRC's over its register walk of W, as its public functions choose).
template <Walk W>
struct operations_over {
  static size_t copy_to_iter(const void* addr, size_t bytes, iov_iter* i) {
    return internal::copy_to_iter<W>(addr, bytes, i);
  }
  static size_t copy_from_iter(void* addr, size_t bytes, iov_iter* i) {
    return internal::copy_from_iter<W>(addr, bytes, i);
  }
  static bool copy_to_iter_full(const void* addr, size_t bytes, iov_iter* i) {
    return internal::copy_to_iter_full<W>(addr, bytes, i);
  }
  static bool copy_from_iter_full(void* addr, size_t bytes, iov_iter* i) {
    return internal::copy_from_iter_full<W>(addr, bytes, i);
  }
  static size_t copy_page_to_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
    return internal::copy_page_to_iter<W>(pg, offset, bytes, i);
  }
  static size_t copy_page_from_iter(page* pg, size_t offset, size_t bytes, iov_iter* i) {
    return internal::copy_page_from_iter<W>(pg, offset, bytes, i);
  }
  static size_t iov_iter_zero(size_t bytes, iov_iter* i) { return internal::iov_iter_zero<W>(bytes, i); }
  static size_t copy_from_iter_nocache(void* addr, size_t bytes, iov_iter* i) {
    return internal::copy_from_iter_nocache<W>(addr, bytes, i);
  }
  static bool copy_from_iter_full_nocache(void* addr, size_t bytes, iov_iter* i) {
    return internal::copy_from_iter_full_nocache<W>(addr, bytes, i);
  }
  static size_t copy_to_iter_nocache(const void* addr, size_t bytes, iov_iter* i) {
    return internal::copy_to_iter_nocache<W>(addr, bytes, i);
  }
  static size_t copy_page_to_iter_nofault(page* pg, unsigned offset, size_t bytes, iov_iter* i) {
    return internal::copy_page_to_iter_nofault<W>(pg, offset, bytes, i);
  }
  static size_t crc32c_iter(iov_iter* i, size_t bytes, uint32_t* crc) {
    return internal::crc32c_iter<crc32c_registers_walk<W>>(i, bytes, crc);
  }
  static size_t crc32c_and_copy_to_iter(const void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
    return internal::crc32c_and_copy_to_iter<crc32c_registers_walk<W>>(addr, bytes, crc, i);
  }
  static size_t crc32c_and_copy_from_iter(void* addr, size_t bytes, uint32_t* crc, iov_iter* i) {
    return internal::crc32c_and_copy_from_iter<crc32c_registers_walk<W>>(addr, bytes, crc, i);
  }
  static bool iov_iter_is_zero(const iov_iter* i, size_t bytes) { return internal::iov_iter_is_zero<W>(i, bytes); }
  static size_t iov_iter_skip_zeroes(iov_iter* i, size_t bytes) { return internal::iov_iter_skip_zeroes<W>(i, bytes); }
};

using outofline = operations_over<outofline_walk>;
using pointer = operations_over<pointer_walk>;

}  // namespace iov::internal
