#include "half.hpp"

#include <cmath>
#include <cstring>

#include "common.hpp"

namespace tern::train::detail {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

float bf16ToFloat(uint16_t b) { return floatOf(static_cast<uint32_t>(b) << 16); }

uint16_t floatToBf16(float f) {
  uint32_t u = bitsOf(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return floatOf(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    // Zero or subnormal: value = mant * 2^-24, exact in fp32.
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return floatOf(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t floatToHalf(float f) {
  uint32_t u = bitsOf(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (a < 0x38800000u) {
    // Result is subnormal (or zero): scale so that the fp16 subnormal unit (2^-24) becomes 1 and round to
    // nearest even in fp32 arithmetic, which is exact here.
    float v = std::nearbyint(floatOf(a) * 16777216.0f);
    return sign | static_cast<uint16_t>(v);
  }
  // Normal: re-bias the exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t r = a - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1u);
  return sign | static_cast<uint16_t>(r >> 13);
}

void toFloat(const void* src, ternDataType_t dtype, float* dst, size_t n) {
  switch (dtype) {
    case ternFloat32:
      std::memcpy(dst, src, n * 4);
      return;
    case ternFloat16: {
      auto s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = halfToFloat(s[i]);
      return;
    }
    case ternBfloat16: {
      auto s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16ToFloat(s[i]);
      return;
    }
    default:
      floatTypeSize(dtype);  // throws the standard message
  }
}

void addToFloat(const void* src, ternDataType_t dtype, float* dst, size_t n) {
  switch (dtype) {
    case ternFloat32: {
      auto s = static_cast<const float*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] += s[i];
      return;
    }
    case ternFloat16: {
      auto s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] += halfToFloat(s[i]);
      return;
    }
    case ternBfloat16: {
      auto s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] += bf16ToFloat(s[i]);
      return;
    }
    default:
      floatTypeSize(dtype);
  }
}

void fromFloat(const float* src, float scale, void* dst, ternDataType_t dtype, size_t n) {
  switch (dtype) {
    case ternFloat32: {
      auto d = static_cast<float*>(dst);
      if (scale == 1.0f) {
        if (d != src) std::memmove(d, src, n * 4);
      } else {
        for (size_t i = 0; i < n; ++i) d[i] = src[i] * scale;
      }
      return;
    }
    case ternFloat16: {
      auto d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = floatToHalf(src[i] * scale);
      return;
    }
    case ternBfloat16: {
      auto d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = floatToBf16(src[i] * scale);
      return;
    }
    default:
      floatTypeSize(dtype);
  }
}

}  // namespace tern::train::detail
