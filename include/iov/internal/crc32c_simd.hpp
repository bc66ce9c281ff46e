// crc32c_simd.hpp: the fused copy+CRC kernel behind crc32c.hpp's copies, and
// the choice of kernels for it and for the zero extension. They live in
// src/crc32c.cc:
//   portable  copy a block, then crc32_iscsi() over it while it is in L1;
//             zero extension by a shift-and-add GF(2) multiply
//   avx2      the same copy; zero extension by PCLMULQDQ + the crc32 instruction
//   avx512    one pass: each 64-byte load is stored and folded into the CRC
//             with VPCLMULQDQ (a level that needs VPCLMULQDQ too)
// The level resolves on first use to the best the CPU has (IOV_SIMD=portable|avx2
// caps it); tests force each level in turn:
//
//   for (auto l : {simd_level::portable, simd_level::avx2, simd_level::avx512})
//     if (iov::internal::crc32c_select(l)) RunChecks();
#pragma once

#include <cstddef>
#include <cstdint>

#include "iov/internal/simd_level.hpp"

namespace iov::internal {

// dst <- src[0, len), and returns crc32c(crc, src, len), reading each byte
// once; the buffers do not overlap.
uint32_t crc32c_copy(void* dst, const void* src, size_t len, uint32_t crc);

// Installs the kernels of level `l`; false (and no change) if the CPU lacks it.
bool crc32c_select(simd_level l);
// The level installed now (resolving it first if nothing was called yet).
simd_level crc32c_level();

}  // namespace iov::internal
