// walk.hpp: the walks, for code outside the library that chooses how its own
// steps and the library's operations are driven (a driver's iteration=
// setting), without reaching into iov/internal/:
//   inline_walk      iterate_and_advance2() with the steps inlined
//   pointer_walk     generic_iterate(): the walk compiled once, the steps
//                    called through their pointers
//   outofline_walk   the library's operations' walks compiled once in src/;
//                    it runs only the library's own pairs of steps (any other
//                    pair fails to link)
// operations_over<W> holds every data operation over the walk W, by its
// public name; a pair of one's own steps runs with W::run:
//
//   template <iov::Walk W>
//   size_t fill(iov::iov_iter* it, size_t len, int* c) {
//     return W::template run<iov::steps<fill_step, fill_step>>(it, len, c, nullptr);
//   }
//   size_t n = iov::operations_over<iov::pointer_walk>::copy_from_iter_nocache(dst, len, it);
//
// The Walk concept and the walks are documented in internal/walk.hpp, where
// the operations' headers find them.
#pragma once

#include "iov/internal/outofline.hpp"
#include "iov/internal/walk.hpp"

namespace iov {

using internal::inline_walk;
using internal::outofline_walk;
using internal::pointer_walk;
using internal::steps;
using internal::Walk;

template <Walk W>
using operations_over = internal::operations_over<W>;

}  // namespace iov
