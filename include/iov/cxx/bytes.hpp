// bytes.hpp: what the C++ layer takes where it means bytes: any contiguous,
// sized range of a one-byte trivially copyable type (std::byte, char,
// unsigned char, uint8_t, char8_t), so std::vector<uint8_t>, std::string,
// std::array<char, N> and std::span<std::byte> all work as they are.
//
//   std::vector<uint8_t> out(n);
//   it.copy_from(out);                 // byte_sink: writable elements
//   it.copy_to(std::string("hello"));  // byte_source: read only
#pragma once

#include <cstddef>
#include <ranges>
#include <span>
#include <type_traits>

#include "iov/config.hpp"

namespace iov {

// bool is one byte too, but a range of bools is not a range of bytes.
template <class T>
concept byte_like = std::is_trivially_copyable_v<T> && sizeof(T) == 1 && !std::is_same_v<std::remove_cv_t<T>, bool>;

template <class R>
concept byte_source = std::ranges::contiguous_range<R&> && std::ranges::sized_range<R&> &&
                      byte_like<std::remove_reference_t<std::ranges::range_reference_t<R&>>>;

template <class R>
concept byte_sink = byte_source<R> && !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R&>>>;

template <byte_source R>
std::span<const std::byte> as_byte_span(const R& r) {
  return {reinterpret_cast<const std::byte*>(std::ranges::data(r)), std::ranges::size(r)};
}

template <byte_sink R>
std::span<std::byte> as_writable_byte_span(R& r) {
  return {reinterpret_cast<std::byte*>(std::ranges::data(r)), std::ranges::size(r)};
}

}  // namespace iov
