// fp32 bit patterns and the library's one fp16/bf16 rounding (round to nearest even, integer code), shared by the
// reductions (kernels/reduce.hpp), the codecs (compress/codec_math.hpp, the CPU and CUDA kernels alike) and the
// conversions: one definition gives the same bits on every CPU path and on the GPU. Header-only; compiles as host
// and as CUDA device code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TERN_HD __host__ __device__ __forceinline__
#else
#define TERN_HD inline
#endif

namespace tern {

TERN_HD uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

TERN_HD float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// ---- fp16 / bf16 ---------------------------------------------------------------------------------------------

// Exact widening of an IEEE binary16 value.
TERN_HD float halfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  // inf / NaN; a NaN is quieted (payload kept), as x86 vcvtph2ps does.
  if (exp == 0x1f) return bitsFloat(sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x400000u : 0u));
  if (exp != 0) return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bitsFloat(sign);
  // Subnormal: normalize the mantissa.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bitsFloat(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

// fp32 -> fp16 rounding to nearest even, with subnormals and overflow to inf. NaN becomes a quiet NaN keeping the
// top mantissa bits, which is what x86 F16C (vcvtps2ph) does, so the SIMD path can use the instruction.
TERN_HD uint16_t floatToHalfBits(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax >= 0x38800000u) {                                              // normal fp16 range
    uint32_t r = ax - 0x38000000u;                                      // rebias exponent 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  uint32_t e = ax >> 23;
  if (e < 102) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
  uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - e;  // 14..24: converts to units of 2^-24
  uint32_t q = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

TERN_HD float bf16BitsToFloat(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }

// fp32 -> bf16 rounding to nearest even; NaN stays a (quiet) NaN.
TERN_HD uint16_t floatToBf16Bits(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace tern
