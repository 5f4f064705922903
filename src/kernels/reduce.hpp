// Element-wise reduction kernels for every tern datatype and op, vectorized for AVX2/AVX-512 with run-time
// dispatch and a portable scalar fallback. fp16/bf16 are widened to fp32, combined, and rounded to nearest even.
// These are pure functions: the same inputs give the same bits on every rank and every ISA path.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/float_bits.hpp"
#include "tern/tern.h"

namespace tern {

// dst[i] = a[i] op b[i] for i < count. dst may alias a or b exactly (not partially). ternAvg combines as a sum
// (the division happens once, in finalizeAverage).
void reduce(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype, ternRedOp_t op);

// dst[i] = dst[i] / divisor, the last step of ternAvg: floating types multiply by nothing, they divide (so that
// the result equals sum/n exactly as rounded by IEEE division); integer types use integer division (truncation).
void finalizeAverage(void* dst, size_t count, ternDataType_t dtype, int divisor);

// The scalar reference implementation of reduce(), always available, used by tests to check the SIMD paths bit
// for bit.
void reduceScalar(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype, ternRedOp_t op);

// Name of the instruction set the dispatcher picked on this CPU ("avx512", "avx2", "scalar").
const char* reduceIsaName();

// fp16/bf16 <-> fp32 with round-to-nearest-even: the library's one rounding (base/float_bits.hpp, which the codecs
// use too: integer code that gives the same bits on every CPU path and on the GPU, NaN payloads as F16C); these are
// its names here.
inline float halfToFloat(uint16_t h) { return halfBitsToFloat(h); }
inline uint16_t floatToHalf(float f) { return floatToHalfBits(f); }
inline float bfloat16ToFloat(uint16_t b) { return bf16BitsToFloat(b); }
inline uint16_t floatToBfloat16(float f) { return floatToBf16Bits(f); }

}  // namespace tern
