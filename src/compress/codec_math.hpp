// Arithmetic shared by every codec implementation: the scalar CPU reference, the AVX2/AVX-512 kernels and the CUDA
// kernels all call (or mirror lane for lane) these functions, so that one input and one seed give the same payload
// bits everywhere. Everything here is header-only and compiles as host and as CUDA device code.
//
// Rules that make results reproducible across implementations:
//  - every float operation is a single IEEE operation rounded to nearest even: no FMA contraction (mulRn/addRn/subRn
//    stop the compiler from fusing, on the CPU and on the GPU), no reassociation, no approximate division or sqrt;
//  - float sums follow one fixed tree (pairwise_sum.hpp), maxima are taken on integer bit patterns (order-free);
//  - random numbers come from a counter-based hash of (seed, step, stream, element index), never from state;
//  - fp16/bf16 rounding is done with integer code (identical NaN handling on every device; base/float_bits.hpp).
// Results are bit-identical for inputs without NaN; with NaN inputs the payload is NaN where it should be, but
// the NaN payload bits may differ between devices. Flush-to-zero modes (MXCSR FTZ/DAZ, nvcc -ftz=true) break the
// equality for denormals and must stay off.
#pragma once

#include <cstdint>
#include <cstring>

#include "base/float_bits.hpp"

namespace tern::compress {

// The bit-pattern and fp16/bf16 functions live in base/float_bits.hpp (the reductions use the same rounding); the
// codecs know them by these names too.
using tern::bf16BitsToFloat;
using tern::bitsFloat;
using tern::floatBits;
using tern::floatToBf16Bits;
using tern::floatToHalfBits;
using tern::halfBitsToFloat;

// Keeps a float value opaque to the optimizer so that a product is rounded before it is added (GCC contracts
// a*b+c into an FMA whenever the target has FMA, e.g. inside AVX-512 functions or with -march=native). Every
// product goes through mulRn, so sums and differences need no barrier (and stay vectorizable).
TERN_HD float opaque(float x) {
#if !defined(__CUDA_ARCH__) && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(x));
#endif
  return x;
}

TERN_HD float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return opaque(a * b);
#endif
}

TERN_HD float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

TERN_HD float subRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

TERN_HD float divRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

TERN_HD float sqrtRn(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return __builtin_sqrtf(a);
#endif
}

// Element count as float, rounded to nearest (exact below 2^24).
TERN_HD float countToFloat(uint64_t n) {
#if defined(__CUDA_ARCH__)
  return __ull2float_rn(n);
#else
  return static_cast<float>(n);
#endif
}

// |x| as a bit pattern: an unsigned integer that orders like |x| (NaN above inf). Maxima and Top-K thresholds are
// taken on these keys, which makes them exact and independent of evaluation order.
TERN_HD uint32_t absKey(float x) { return floatBits(x) & 0x7fffffffu; }

// ---- counter-based random numbers -------------------------------------------------------------------------------

// Streams keep the random numbers of different uses independent.
enum RngStream : uint32_t { kRngStreamQsgd = 1, kRngStreamTopkSample = 2 };

struct RngKey {
  uint32_t k0;
  uint32_t k1;
};

TERN_HD uint64_t splitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The key of one (seed, step, stream): computed once per encode call, on the host.
TERN_HD RngKey makeRngKey(uint64_t seed, uint64_t step, uint32_t stream) {
  uint64_t h = splitMix64(seed ^ splitMix64(step ^ splitMix64(stream)));
  return RngKey{static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
}

// Two good 32-bit bijective mixers (C. Wellons' hash-prospector results). 32-bit lanes keep the SIMD versions
// cheap: four vector multiplies per 16 elements of AVX-512.
TERN_HD uint32_t rngMixA(uint32_t x) {
  x ^= x >> 16;
  x *= 0x21f0aaadu;
  x ^= x >> 15;
  x *= 0x735a2d97u;
  x ^= x >> 15;
  return x;
}

TERN_HD uint32_t rngMixB(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// Salt of the high 32 bits of a 64-bit element index (so indices beyond 2^32 get fresh numbers).
TERN_HD uint32_t rngHighSalt(uint32_t indexHigh) { return indexHigh * 0x9e3779b1u; }

// 32 random bits for element `index` (a global element index of the tensor, so that chunking does not change them).
TERN_HD uint32_t rngBits(RngKey key, uint64_t index) {
  uint32_t x = rngMixA(static_cast<uint32_t>(index) ^ key.k0);
  x += key.k1 ^ rngHighSalt(static_cast<uint32_t>(index >> 32));
  return rngMixB(x);
}

// A uniform float in [0, 1) with 24 random bits (exact conversion).
TERN_HD float rngUniform(uint32_t bits) { return static_cast<float>(static_cast<int32_t>(bits >> 8)) * 0x1p-24f; }

// Uniform integer in [0, n) for n < 2^32 (multiply-high, no division).
TERN_HD uint32_t rngBelow(uint32_t bits, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(bits) * n) >> 32);
}

// ---- QSGD ---------------------------------------------------------------------------------------------------------

// Buckets whose max |x| is below this are sent as all-zero levels: s/max would overflow, and with error feedback
// the values stay in the residual.
inline constexpr float kQsgdTinyScale = 0x1p-100f;

// Multiplier turning |x| into a level in [0, s]: s / max, or 0 for tiny (or NaN) max.
TERN_HD float qsgdInverse(float maxAbs, float levels) {
  return maxAbs >= kQsgdTinyScale ? divRn(levels, maxAbs) : 0.0f;
}

// Value of one level: max / s.
TERN_HD float qsgdStep(float maxAbs, float levels) { return divRn(maxAbs, levels); }

// Unbiased stochastic rounding of a = |x| * inv to an integer level in [0, s]: floor(a) + 1 with probability
// a - floor(a). a is clamped to s first (|x| * (s/max) can exceed s by an ulp; NaN maps to s).
TERN_HD uint32_t qsgdLevel(float absX, float inv, float levels, uint32_t randomBits) {
  float a = mulRn(absX, inv);
  a = a < levels ? a : levels;
#if defined(__CUDA_ARCH__)
  float l = floorf(a);
#else
  float l = __builtin_floorf(a);
#endif
  float p = a - l;  // exact
  return static_cast<uint32_t>(l) + (rngUniform(randomBits) < p ? 1u : 0u);
}

// Decoded value of a level with sign bit `negative` (0 or 1): +-(level * step).
TERN_HD float qsgdValue(uint32_t level, uint32_t negative, float step) {
  return bitsFloat(floatBits(mulRn(static_cast<float>(static_cast<int32_t>(level)), step)) ^ (negative << 31));
}

}  // namespace tern::compress
