// crc32c_simd.hpp: the CRC engine's kernels behind crc32c.hpp's streaming
// state (crc32c_init/update/final), its fused copy, and their dispatch. They
// live in src/crc32c.cc (dispatch, the portable level, zero extension) and
// src/crc32c_fold_x86.cc (the folding levels):
//   portable  the state holds a finished CRC: ISA-L's crc32_iscsi() per piece,
//             the fused copy a block copy then the CRC while it is in L1;
//             zero extension by a shift-and-add GF(2) multiply
//   avx2      the state's window, eight 16-byte lanes, folded 128 bytes at a
//             time with PCLMULQDQ (VEX-encoded), or two lanes an instruction
//             with 256-bit VPCLMULQDQ where the CPU has it without AVX-512
//             (the wide form, the same state); tails with the crc32
//             instruction
//   avx512    a 256-byte window in four registers folded with VPCLMULQDQ (a
//             level that needs VPCLMULQDQ too); the fused copy stores each
//             64-byte load and folds it, one pass; the iterator forms run
//             their whole walk in one call, the window kept in registers
//             between pieces (crc32c_registers_walk, crc32c.hpp)
// The level is chosen on first use, by timing each level the CPU has on 512-byte
// pieces (simd_level.hpp; IOV_SIMD forces one); a state keeps the level it was
// initialized at. Tests force each
// level in turn:
//
//   for (auto l : {simd_level::portable, simd_level::avx2, simd_level::avx512})
//     if (iov::internal::crc32c_select(l)) RunChecks();
#pragma once

#include <cstddef>
#include <cstdint>

#include "iov/internal/simd_level.hpp"

namespace iov {
struct crc32c_state;
struct iov_iter;
}

namespace iov::internal {

// Installs the kernels of level `l` for states initialized from now on;
// false (and no change) if the CPU lacks it.
bool crc32c_select(simd_level l);
// The level installed now (choosing it first if nothing was called yet).
simd_level crc32c_level();
// The choice made at first use: the level and each level's trial time.
simd_choice crc32c_choice();
// Chooses again (under the current CPU cap and IOV_SIMD) and installs it.
simd_choice crc32c_choose();

// crc32c_update() and crc32c_copy_update() (crc32c.hpp) call the avx512 and
// the wide avx2 kernels directly and every other level through the *_other
// dispatch.
// A copy update sets dst <- src[0, len) and extends the state over those
// bytes, reading each once; the buffers do not overlap.
inline constexpr uint8_t kCrc32cAvx512 = static_cast<uint8_t>(simd_level::avx512);
void crc32c_update_avx512(crc32c_state* st, const void* src, size_t len);
void crc32c_copy_update_avx512(crc32c_state* st, void* dst, const void* src, size_t len);
// A state of the avx2 level in its wide form (crc32c_select_wide_clmul) holds
// this code instead of the level's, so that crc32c_update() calls its kernel
// directly too: the walk of 512-byte sectors pays one call a piece, not three.
inline constexpr uint8_t kCrc32cAvx2Wide = 0x80 | static_cast<uint8_t>(simd_level::avx2);
void crc32c_update_vclmul(crc32c_state* st, const void* src, size_t len);
void crc32c_copy_update_vclmul(crc32c_state* st, void* dst, const void* src, size_t len);
void crc32c_update_other(crc32c_state* st, const void* src, size_t len);
void crc32c_copy_update_other(crc32c_state* st, void* dst, const void* src, size_t len);
// Between the kernels (src/crc32c*.cc): a folded state whose tail has grown
// past the fold table's reach (256 bytes) is turned back into a running CRC
// before a piece goes into the window; these do that, then the update.
void crc32c_update_restarting(crc32c_state* st, const void* src, size_t len);
void crc32c_copy_update_restarting(crc32c_state* st, void* dst, const void* src, size_t len);
// The folding kernels (src/crc32c_fold_x86.cc). final reads the state and
// leaves it as is.
uint32_t crc32c_final_avx512(const crc32c_state* st);
void crc32c_update_clmul(crc32c_state* st, const void* src, size_t len);
void crc32c_copy_update_clmul(crc32c_state* st, void* dst, const void* src, size_t len);
uint32_t crc32c_final_clmul(const crc32c_state* st);
// The avx2 level's wide form (256-bit VPCLMULQDQ), on by default where the
// CPU has it; tests run the level both ways. false (no change) if the CPU
// lacks it. Not for the non-x86 build.
bool crc32c_select_wide_clmul(bool wide);
bool crc32c_wide_clmul();

}  // namespace iov::internal
