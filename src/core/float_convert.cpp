#include "core/float_convert.hpp"

#include <cstdint>
#include <cstring>

#include "base/dtype.hpp"
#include "kernels/reduce.hpp"

namespace tern {

namespace {

float toFloatValue(const void* src, ternDataType_t t, size_t i) {
  switch (t) {
    case ternFloat16:
      return halfToFloat(static_cast<const uint16_t*>(src)[i]);
    case ternBfloat16:
      return bfloat16ToFloat(static_cast<const uint16_t*>(src)[i]);
    case ternFloat64:
      return static_cast<float>(static_cast<const double*>(src)[i]);
    default:
      return static_cast<const float*>(src)[i];
  }
}

void storeFloatValue(void* dst, ternDataType_t t, size_t i, float v) {
  switch (t) {
    case ternFloat16:
      static_cast<uint16_t*>(dst)[i] = floatToHalf(v);
      break;
    case ternBfloat16:
      static_cast<uint16_t*>(dst)[i] = floatToBfloat16(v);
      break;
    case ternFloat64:
      static_cast<double*>(dst)[i] = v;
      break;
    default:
      static_cast<float*>(dst)[i] = v;
  }
}

}  // namespace

bool isFloatType(ternDataType_t t) {
  return t == ternFloat16 || t == ternBfloat16 || t == ternFloat32 || t == ternFloat64;
}

void convertFloats(const void* src, ternDataType_t srcType, void* dst, ternDataType_t dstType, size_t count) {
  if (srcType == dstType) {
    if (src != dst && count > 0) std::memmove(dst, src, count * dataTypeSize(srcType));
    return;
  }
  for (size_t i = 0; i < count; ++i) storeFloatValue(dst, dstType, i, toFloatValue(src, srcType, i));
}

}  // namespace tern
