// pieces.hpp: the pieces of an iterator as a range of byte spans, for std::ranges
// and range-v3 algorithms.
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

#include "range/v3/range_fwd.hpp"  // ranges::view_base, so range-v3 sees a view too

#include "iov/iov_iter.hpp"
#include "iov/position.hpp"
#include "iov/xarray.hpp"

namespace iov {

namespace internal {
// The first non-empty piece of an iterator, or an empty span at its end.
inline std::span<std::byte> first_piece(iov_iter& i) {
  for (;;) {
    if (!i.count)
      return {};
    std::byte* base = nullptr;
    size_t len = 0;
    switch (i.type) {
      case ITER_UBUF:
        base = static_cast<std::byte*>(i.ubuf) + i.iov_offset;
        len = i.count;
        break;
      case ITER_IOVEC:
      case ITER_KVEC: {
        const ::iovec* v = i.type == ITER_IOVEC ? i.iov : reinterpret_cast<const ::iovec*>(i.kvec);
        base = static_cast<std::byte*>(v->iov_base) + i.iov_offset;
        len = v->iov_len - i.iov_offset;
        break;
      }
      case ITER_BVEC: {
        size_t offset = i.bvec->bv_offset + i.iov_offset;
        base = static_cast<std::byte*>(page_address(i.bvec->bv_page + offset / PAGE_SIZE)) + offset % PAGE_SIZE;
        len = std::min(size_t{i.bvec->bv_len} - i.iov_offset, PAGE_SIZE - offset % PAGE_SIZE);
        break;
      }
      case ITER_XARRAY: {
        size_t pos = static_cast<size_t>(i.xarray_start) + i.iov_offset;
        void* pg = xa_load(i.xarray, pos >> PAGE_SHIFT);
        if (!pg)
          return {};
        base = static_cast<std::byte*>(pg) + (pos & (PAGE_SIZE - 1));
        len = PAGE_SIZE - (pos & (PAGE_SIZE - 1));
        break;
      }
      default:  // DISCARD has no memory
        return {};
    }
    if (len)
      return {base, std::min(len, i.count)};
    // An empty segment (or the tail of one): step over it.
    if (i.type == ITER_BVEC) {
      i.bvec++;
    } else if (i.type == ITER_KVEC) {
      i.kvec++;
    } else {
      i.iov++;
    }
    i.nr_segs--;
    i.iov_offset = 0;
  }
}
}  // namespace internal

// A view for both std::ranges and range-v3 (each recognises its own view_base;
// std::ranges::view_interface is left out as clang 14 cannot check it on an
// incomplete class with libstdc++ 12).
class pieces_view : public std::ranges::view_base, public ranges::view_base {
 public:
  class iterator {
   public:
    using value_type = std::span<std::byte>;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // reference is not a true reference

    iterator() = default;
    explicit iterator(const iov_iter& i) : it_(i) { piece_ = internal::first_piece(it_); }

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
