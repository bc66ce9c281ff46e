// zero_scan_simd.hpp: the dispatch points of the zero-scan kernels behind
// memchr_inv() and mem_is_zero() (zero_scan.hpp). The kernels themselves
// (portable, AVX2, AVX-512) live in src/zero_scan.cc.
//
// A call goes through one relaxed atomic function pointer, resolved on first
// use to the level that ran fastest here (simd_level.hpp); tests force each
// level in turn:
//
//   for (auto l : {simd_level::portable, simd_level::avx2, simd_level::avx512})
//     if (iov::internal::zero_scan_select(l)) RunChecks();
#pragma once

#include <atomic>
#include <cstddef>

#include "iov/internal/simd_level.hpp"

namespace iov::internal {

using memchr_inv_fn = const void* (*)(const void* p, int c, size_t len);
using mem_is_zero_fn = bool (*)(const void* p, size_t len);

// Both start out pointing at a resolver that chooses the level, installs its
// kernels and forwards the call, so a call during static initialization is safe.
extern std::atomic<memchr_inv_fn> memchr_inv_impl;
extern std::atomic<mem_is_zero_fn> mem_is_zero_impl;

// Installs the kernels of level `l`; false (and no change) if the CPU lacks it.
bool zero_scan_select(simd_level l);
// The level installed now (choosing it first if nothing was called yet).
simd_level zero_scan_level();
// The choice made at first use: the level and each level's trial time.
simd_choice zero_scan_choice();
// Chooses again (under the current CPU cap and IOV_SIMD) and installs it.
simd_choice zero_scan_choose();

}  // namespace iov::internal
