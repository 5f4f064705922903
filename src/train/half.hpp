// fp16/bf16 <-> fp32 conversions for gradients and parameters kept in half precision, through the public
// ternConvert (the core's own rounding, so that values the core rounds and values rounded here agree).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tern/tern.h"

namespace tern::train::detail {

// dst[i] = float(src[i]) for src of dtype (fp32, fp16, bf16).
void toFloat(const void* src, ternDataType_t dtype, float* dst, size_t n);
// dst[i] += float(src[i]).
void addToFloat(const void* src, ternDataType_t dtype, float* dst, size_t n);
// dst[i] = dtype(src[i] * scale).
void fromFloat(const float* src, float scale, void* dst, ternDataType_t dtype, size_t n);

}  // namespace tern::train::detail
