// crc32c_gf2.hpp: the GF(2) arithmetic modulo the CRC-32C polynomial that the
// CRC engine's constants are made of, all at compile time: multiplication by
// x and its inverse, x^e for any e, products, and the tables the engine reads
// (x^(8 * 2^k) for crc32c_extend_zeroes, and the fold constants for moving
// 16 bytes of message on by any distance under 512 bytes).
//
//   constexpr uint32_t x8 = iov::internal::gf2::xpow(8);            // one zero byte
//   fold_constant k = iov::internal::gf2::kFoldBytes.by(256);         // a 256-byte fold
//
// Conventions. A 32-bit CRC value is reflected: bit 31 - d holds the
// coefficient of x^d, and P = x^32 + 0x1EDC6F41 is 0x82F63B78 reflected. The
// raw update is crc32c(c, M) = (c * x^|M| + M) * x^32 mod P (|M| in bits, the
// first bit of M the highest power), so a run of n zero bytes multiplies the
// CRC by x^(8n), and crc32c(c, M) == crc32c(0, M with c xored into its first
// four bytes): the two facts the engine stands on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace iov::internal::gf2 {

inline constexpr uint32_t kPoly = 0x82F63B78u;  // P without x^32, reflected
inline constexpr uint32_t kOne = 0x80000000u;   // the polynomial 1

constexpr uint32_t mul_x(uint32_t v) { return (v >> 1) ^ ((v & 1) ? kPoly : 0); }
// The inverse of mul_x: P has a constant term, so x is invertible mod P.
constexpr uint32_t div_x(uint32_t v) {
  uint32_t low = v >> 31;  // the x^0 coefficient of v is what x * u carried out of x^31
  return ((v ^ (low ? kPoly : 0)) << 1) | low;
}
static_assert(mul_x(div_x(0x12345678u)) == 0x12345678u);

// x^e mod P for small |e| (e may be negative).
constexpr uint32_t xpow(long e) {
  uint32_t v = kOne;
  for (; e > 0; e--) v = mul_x(v);
  for (; e < 0; e++) v = div_x(v);
  return v;
}

// a * b mod P, shift-and-add: 32 steps, no branch on the data.
constexpr uint32_t multmodp(uint32_t a, uint32_t b) {
  uint32_t p = 0;
  for (int k = 31; k >= 0; k--) {  // bit k of a holds x^(31 - k): walk up from x^0
    p ^= b & (0u - ((a >> k) & 1));
    b = mul_x(b);
  }
  return p;
}

// x^(8 * 2^k) mod P, for extending a CRC over 2^k zero bytes.
struct x8pow_tables {
  uint32_t plain[64];  // x^(8 * 2^k) mod P
  uint32_t clmul[64];  // x^(8 * 2^k - 33) mod P: for a carry-less multiply then the crc32 instruction
};
constexpr x8pow_tables make_x8pow_tables() {
  x8pow_tables t{};
  const uint32_t x_minus_33 = xpow(-33);
  uint32_t v = xpow(8);
  for (int k = 0; k < 64; k++) {
    t.plain[k] = v;
    t.clmul[k] = multmodp(v, x_minus_33);
    v = multmodp(v, v);
  }
  return t;
}
inline constexpr x8pow_tables kX8Pow = make_x8pow_tables();
static_assert(kX8Pow.plain[1] == xpow(16) && kX8Pow.plain[5] == xpow(256));

// Folding. A 16-byte lane of message, loaded little-endian, is reflected too:
// its low qword H holds x^127..x^64 and its high qword L x^63..x^0. Moving the
// lane D bits further on multiplies it by x^D:
//   H * x^(64 + D) + L * x^D  ==  clmul(H, x^(D + 31)) ^ clmul(L, x^(D - 33))   (mod P)
// (a reflected clmul carries an extra x, and a 32-bit constant in a qword's
// low half an extra x^32). The sum has degree < 96 and stands for the lane
// D bits on, where it is xored into the message. Each distance's constant
// pair is {lo: x^(D + 31), hi: x^(D - 33)}.
struct fold_constant {
  uint32_t lo, hi;
};

// The pairs for every distance of 0 to 511 bytes: the engine folds its
// 256-byte window on by 256 bytes plus a tail of under 256, and a lane over
// the last tail when it reduces.
struct fold_table {
  static constexpr size_t kMaxBytes = 512;
  fold_constant k[kMaxBytes];
  constexpr fold_constant by(size_t bytes) const { return k[bytes]; }
};
constexpr fold_table make_fold_table() {
  fold_table t{};
  uint32_t lo = xpow(31), hi = xpow(-33);
  for (size_t d = 0; d < fold_table::kMaxBytes; d++) {
    t.k[d] = {lo, hi};
    for (int b = 0; b < 8; b++) lo = mul_x(lo), hi = mul_x(hi);
  }
  return t;
}
inline constexpr fold_table kFoldBytes = make_fold_table();
static_assert(kFoldBytes.by(16).lo == xpow(128 + 31) && kFoldBytes.by(256).hi == xpow(2048 - 33));

}  // namespace iov::internal::gf2
