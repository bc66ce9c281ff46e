// pieces_range_v3.hpp: iov::pieces_view as a range-v3 view too, for the
// programs that use range-v3 (which then provide its include path; the rest
// of iov does not need range-v3).
//
//   #include <iov/cxx/pieces_range_v3.hpp>
//   auto sizes = iov::pieces(it) | ranges::views::transform([](auto s) { return s.size(); });
#pragma once

#include <range/v3/range/concepts.hpp>

#include "iov/cxx/pieces.hpp"

template <>
inline constexpr bool ranges::enable_view<iov::pieces_view> = true;
