// pieces.hpp: the pieces of an iterator as a range of byte spans, for
// std::ranges algorithms (and range-v3's, with pieces_range_v3.hpp).
//
//   for (std::span<std::byte> piece : iov::pieces(it))
//     total += piece.size();
//   auto sizes = iov::pieces(it) | std::views::transform(&std::span<std::byte>::size);
//
// A piece is what a step would be handed: one contiguous run, never crossing a
// page for BVEC and XARRAY; empty segments are left out. The view walks a copy,
// so the iterator itself does not move; an XARRAY view ends at a missing index
// and, holding no RCU section between pieces, wants pages that stay put while
// it is walked (as an iov_iter over an xarray always does).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <span>

#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"
#include "iov/position.hpp"

namespace iov {

namespace internal {
// The first non-empty piece of i, or an empty span at its end, found by the
// walk itself (a step that records the piece and processes none of it, which
// ends the walk): every iterator type's pieces are the walk's.
inline std::span<std::byte> first_piece(const iov_iter& i) {
  std::span<std::byte> piece;
  auto record = [](void* base, size_t, size_t len, void* priv, void*) -> size_t {
    if (len)  // an empty bvec piece: the walk goes on
      *static_cast<std::span<std::byte>*>(priv) = {static_cast<std::byte*>(base), len};
    return len;
  };
  iov_iter scratch = i;
  iterate_and_advance2(&scratch, scratch.count, &piece, nullptr, record, record);
  return piece;
}
}  // namespace internal

// A view for std::ranges (range-v3 sees one too with cxx/pieces_range_v3.hpp;
// std::ranges::view_interface is left out as clang 14 cannot check it on an
// incomplete class with libstdc++ 12).
class pieces_view : public std::ranges::view_base {
 public:
  class iterator {
   public:
    using value_type = std::span<std::byte>;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // reference is not a true reference

    iterator() = default;
    explicit iterator(const iov_iter& i) : it_(i), piece_(internal::first_piece(it_)) {}

    value_type operator*() const { return piece_; }
    iterator& operator++() {
      iov_iter_advance(&it_, piece_.size());
      piece_ = internal::first_piece(it_);
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    // Two positions are equal when as many bytes are left; every end is equal.
    friend bool operator==(const iterator& a, const iterator& b) {
      if (a.piece_.empty() || b.piece_.empty())
        return a.piece_.empty() && b.piece_.empty();
      return a.it_.count == b.it_.count;
    }

   private:
    iov_iter it_{};
    std::span<std::byte> piece_{};
  };

  pieces_view() = default;
  explicit pieces_view(const iov_iter& i) : it_(i) {}
  iterator begin() const { return iterator(it_); }
  iterator end() const { return iterator(); }
  bool empty() const { return begin() == end(); }

 private:
  iov_iter it_{};
};

inline pieces_view pieces(const iov_iter& i) { return pieces_view(i); }

}  // namespace iov

template <>
inline constexpr bool std::ranges::enable_borrowed_range<iov::pieces_view> = true;
