// fp16/bf16 <-> fp32 conversions in integer arithmetic, so that they give the same bits whatever the FP environment
// (FTZ/DAZ) and match the F16C instructions exactly, NaN payloads included: vcvtph2ps/vcvtps2ph keep the top
// payload bits and set the quiet bit, and so do these.
#include <bit>
#include <cstdint>

#include "kernels/reduce.hpp"

namespace tern {

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal half m * 2^-24 is a normal float: with p the index of m's top bit, the value is 2^(p-24) * 1.f.
    const int p = 31 - std::countl_zero(mantissa);
    bits = sign | (static_cast<uint32_t>(p - 24 + 127) << 23) | ((mantissa << (23 - p)) & 0x7fffffu);
  }
  return std::bit_cast<float>(bits);
}

uint16_t floatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: keep the top payload bits, quiet.
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf.
  if (magnitude >= 0x38800000u) {                                              // Normal half (>= 2^-14).
    // Rebias the exponent, then round the 13 dropped bits to nearest even; a carry correctly bumps the exponent.
    const uint32_t rebased = magnitude - ((127u - 15u) << 23);
    return static_cast<uint16_t>(sign | ((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13));
  }
  if (magnitude <= 0x33000000u) return sign;  // <= 2^-25 rounds to zero (2^-25 is a tie, zero is even).
  // Subnormal half: the value is m * 2^(e-150) with the implicit bit in m, the half unit is 2^-24, so the half
  // mantissa is m >> (126 - e) rounded to nearest even. A round-up into 0x400 gives the smallest normal, correctly.
  const uint32_t e = magnitude >> 23;
  const uint32_t m = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  uint32_t q = m >> shift;
  if (rest > halfway || (rest == halfway && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

float bfloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t floatToBfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  // NaN: truncating could leave an all-zero payload (inf), so set the quiet bit.
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  // Cannot overflow 32 bits: the largest non-NaN magnitude is inf, 0x7f800000 (+ sign).
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace tern
