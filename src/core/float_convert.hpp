// Conversions between the floating-point datatypes (ternConvert), through fp32 as the collectives convert, with
// the library's one fp16/bf16 rounding (compress/codec_math.hpp).
#pragma once

#include <cstddef>

#include "tern/tern.h"

namespace tern {

// float16, bfloat16, float32 or float64.
bool isFloatType(ternDataType_t t);

// dst[i] = dstType(srcType src[i]) for i < count, both float types (isFloatType). Equal types copy (src and dst
// may overlap); otherwise every value goes through fp32, so fp64 to a half type rounds twice, like the collectives.
void convertFloats(const void* src, ternDataType_t srcType, void* dst, ternDataType_t dstType, size_t count);

}  // namespace tern
