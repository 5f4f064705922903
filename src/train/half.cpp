#include "half.hpp"

#include <algorithm>

#include "common.hpp"
#include "tern/tern_ext.h"

namespace tern::train::detail {
namespace {

// Converts through the library (ternConvert), so values rounded here and inside collectives agree bit for bit.
void convert(const void* src, ternDataType_t from, void* dst, ternDataType_t to, size_t n) {
  check(ternConvert(src, from, dst, to, n), nullptr, "ternConvert");
}

// Elements converted at a time through a stack buffer by the accumulating and scaling conversions.
constexpr size_t kBlock = 1024;

}  // namespace

void toFloat(const void* src, ternDataType_t dtype, float* dst, size_t n) {
  floatTypeSize(dtype);  // throws the standard message for other types
  convert(src, dtype, dst, ternFloat32, n);
}

void addToFloat(const void* src, ternDataType_t dtype, float* dst, size_t n) {
  const size_t e = floatTypeSize(dtype);
  float block[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    convert(static_cast<const char*>(src) + i * e, dtype, block, ternFloat32, m);
    for (size_t j = 0; j < m; ++j) dst[i + j] += block[j];
  }
}

void fromFloat(const float* src, float scale, void* dst, ternDataType_t dtype, size_t n) {
  const size_t e = floatTypeSize(dtype);
  if (scale == 1.0f) {
    if (dtype != ternFloat32 || dst != src) convert(src, ternFloat32, dst, dtype, n);
    return;
  }
  float block[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    for (size_t j = 0; j < m; ++j) block[j] = src[i + j] * scale;
    convert(block, ternFloat32, static_cast<char*>(dst) + i * e, dtype, m);
  }
}

}  // namespace tern::train::detail
