// Helpers for the AVX2 and AVX-512 codec kernels. Only *_simd.cpp files include this: every function here is
// compiled for its instruction set with __attribute__((target)), and only called after run-time dispatch
// (isa.hpp) has checked that the CPU supports it.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#define TERN_CODEC_X86 1
// GCC 12 warns falsely inside AVX-512 intrinsics (_mm512_undefined_*, GCC bug 105593) when they are inlined into
// target-attributed functions; the warning is about the header, not about this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "compress/input_types.hpp"

#define TERN_AVX2 __attribute__((target("avx2,f16c,bmi,bmi2,popcnt")))
#define TERN_AVX512 __attribute__((target("avx2,f16c,bmi,bmi2,popcnt,avx512f,avx512bw,avx512vl,avx512dq")))

namespace tern::compress::simd {

// Hides a vector from the optimizer so a product is rounded before the next add (no FMA contraction; AVX-512
// targets imply FMA and GCC contracts intrinsics).
TERN_AVX512 inline __m512 opaque(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}
TERN_AVX2 inline __m256 opaque(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

// ---- 16 / 8 elements of any input type, widened to fp32 --------------------------------------------------------

TERN_AVX512 inline __m512 load16(F32Input, const float* p) { return _mm512_loadu_ps(p); }
TERN_AVX512 inline __m512 load16(F16Input, const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
TERN_AVX512 inline __m512 load16(Bf16Input, const uint16_t* p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

TERN_AVX2 inline __m256 load8(F32Input, const float* p) { return _mm256_loadu_ps(p); }
TERN_AVX2 inline __m256 load8(F16Input, const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
TERN_AVX2 inline __m256 load8(Bf16Input, const uint16_t* p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// ---- fp32 -> bf16 with round to nearest even (integer code, same NaN rule as floatToBf16Bits) ---------------------

TERN_AVX512 inline __m256i toBf16x16(__m512 v) {
  __m512i x = _mm512_castps_si512(v);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb), 16);
  __m512i ax = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
  __mmask16 nan = _mm512_cmpgt_epu32_mask(ax, _mm512_set1_epi32(0x7f800000));
  __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

TERN_AVX2 inline __m128i toBf16x8(__m256 v) {
  __m256i x = _mm256_castps_si256(v);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
  __m256i ax = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  // Signed compare is fine: ax < 2^31.
  __m256i nan = _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x7f800000));
  __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  // Values are < 2^16: pack the 32-bit lanes to 16 bits (packus works per 128-bit half, then fix the order).
  __m256i packed = _mm256_packus_epi32(r, r);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

TERN_AVX512 inline __m256i toHalfx16(__m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
TERN_AVX2 inline __m128i toHalfx8(__m256 v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }

// ---- counter-based random numbers (codec_math.hpp rngBits), 16 / 8 lanes -----------------------------------------

TERN_AVX512 inline __m512i rngMixA(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x21f0aaad));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x735a2d97));
  return _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
}
TERN_AVX512 inline __m512i rngMixB(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x7feb352d));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(static_cast<int>(0x846ca68bu)));
  return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}
// Random bits of elements index .. index+15.
TERN_AVX512 inline __m512i rngBits16(RngKey key, uint64_t index) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i base = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(index)));
  __m512i lo = _mm512_add_epi32(base, iota);
  uint32_t hi = static_cast<uint32_t>(index >> 32);
  __m512i salt = _mm512_set1_epi32(static_cast<int>(key.k1 ^ rngHighSalt(hi)));
  __mmask16 carry = _mm512_cmplt_epu32_mask(lo, base);  // the low word wrapped: high word + 1
  if (carry)
    salt = _mm512_mask_mov_epi32(salt, carry, _mm512_set1_epi32(static_cast<int>(key.k1 ^ rngHighSalt(hi + 1))));
  __m512i x = rngMixA(_mm512_xor_si512(lo, _mm512_set1_epi32(static_cast<int>(key.k0))));
  return rngMixB(_mm512_add_epi32(x, salt));
}

TERN_AVX2 inline __m256i rngMixA(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x21f0aaad));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x735a2d97));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
}
TERN_AVX2 inline __m256i rngMixB(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x7feb352d));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(0x846ca68bu)));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}
TERN_AVX2 inline __m256i rngBits8(RngKey key, uint64_t index) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  uint32_t base32 = static_cast<uint32_t>(index);
  __m256i lo = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(base32)), iota);
  uint32_t hi = static_cast<uint32_t>(index >> 32);
  __m256i salt = _mm256_set1_epi32(static_cast<int>(key.k1 ^ rngHighSalt(hi)));
  if (base32 > 0xfffffff8u) {  // the low word wraps inside these 8 lanes: lanes past the wrap use high word + 1
    __m256i wrapped = _mm256_cmpgt_epi32(iota, _mm256_set1_epi32(static_cast<int>(0xffffffffu - base32)));
    salt = _mm256_blendv_epi8(salt, _mm256_set1_epi32(static_cast<int>(key.k1 ^ rngHighSalt(hi + 1))), wrapped);
  }
  __m256i x = rngMixA(_mm256_xor_si256(lo, _mm256_set1_epi32(static_cast<int>(key.k0))));
  return rngMixB(_mm256_add_epi32(x, salt));
}

}  // namespace tern::compress::simd

#endif  // x86
