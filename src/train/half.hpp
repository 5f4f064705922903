// fp16/bf16 <-> fp32 conversions for gradients and parameters kept in half precision. The public API converts
// inside collectives but does not export its kernels, so the training layers carry their own (round to nearest
// even, as the core does, so that values the core rounds and values rounded here agree).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tern/tern.h"

namespace tern::train::detail {

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

// dst[i] = float(src[i]) for src of dtype (fp32, fp16, bf16).
void toFloat(const void* src, ternDataType_t dtype, float* dst, size_t n);
// dst[i] += float(src[i]).
void addToFloat(const void* src, ternDataType_t dtype, float* dst, size_t n);
// dst[i] = dtype(src[i] * scale).
void fromFloat(const float* src, float scale, void* dst, ternDataType_t dtype, size_t n);

}  // namespace tern::train::detail
