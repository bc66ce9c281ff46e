// generic_iterate.cc: the out-of-line walk, compiled once and called through
// function pointers (the kernel's experiment of un-inlining
// iterate_and_advance). It lives in its own translation unit, built without
// LTO, so no caller can inline it.
//
// An indirect call per piece costs little on its own, but under retpolines
// (-mindirect-branch=thunk, as hardened kernels build) each one is a
// mispredicted return. So, as the kernel's INDIRECT_CALL_*() does, the walk
// recognises the library's own steps: each pair an operation runs through
// internal::generic_walk registers itself at start-up with its own inlined
// walk (internal/walk.hpp), and a call with a registered pair runs that walk;
// any other pair still goes through its pointers. The compare is made once
// per call, not once per piece.
#include <atomic>

#include "iov/internal/walk.hpp"
#include "iov/iterate.hpp"

namespace iov {

namespace {
struct known_pair {
  std::atomic<iov_ustep_f> ustep{nullptr};
  std::atomic<iov_step_f> step{nullptr};
  std::atomic<internal::known_walk_f> walk{nullptr};
};

// The library has a dozen pairs; the table leaves room for a program's own.
constexpr unsigned kMaxKnown = 64;
known_pair known[kMaxKnown];
std::atomic<unsigned> nr_known{0};  // entries [0, nr_known) are complete
std::atomic<unsigned> nr_claimed{0};

internal::known_walk_f find_known(iov_ustep_f ustep, iov_step_f step) {
  unsigned n = nr_known.load(std::memory_order_acquire);
  for (unsigned k = 0; k < n; k++)
    if (known[k].step.load(std::memory_order_relaxed) == step &&
        known[k].ustep.load(std::memory_order_relaxed) == ustep)
      return known[k].walk.load(std::memory_order_relaxed);
  return nullptr;
}
}  // namespace

namespace internal {
bool generic_iterate_register(iov_ustep_f ustep, iov_step_f step, known_walk_f walk) noexcept {
  // Registrations run in static initializers, normally one at a time; a
  // shared library loaded by another thread may race one, hence the claim.
  if (find_known(ustep, step))
    return true;
  unsigned k = nr_claimed.fetch_add(1, std::memory_order_relaxed);
  if (k >= kMaxKnown)
    return false;
  known[k].ustep.store(ustep, std::memory_order_relaxed);
  known[k].step.store(step, std::memory_order_relaxed);
  known[k].walk.store(walk, std::memory_order_relaxed);
  // Publish in claim order, so [0, nr_known) stays complete.
  unsigned expected = k;
  while (!nr_known.compare_exchange_weak(expected, k + 1, std::memory_order_release, std::memory_order_relaxed))
    expected = k;
  return true;
}

bool generic_iterate_knows(iov_ustep_f ustep, iov_step_f step) noexcept { return find_known(ustep, step); }
}  // namespace internal

size_t generic_iterate(iov_iter* iter, size_t len, void* priv, void* priv2, iov_ustep_f ustep, iov_step_f step) {
  if (internal::known_walk_f walk = find_known(ustep, step))
    return walk(iter, len, priv, priv2);
  return iterate_and_advance2(iter, len, priv, priv2, ustep, step);
}

}  // namespace iov
