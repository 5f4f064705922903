// Kernels of the QSGD codec (qsgd_codec.hpp), one set per instruction set, all computing the same bits.
//
// Per bucket: pass 1 takes max |v| on integer keys (order-free) and, with error feedback, stores v = x + residual;
// pass 2 (on data still in L1) quantizes with qsgdLevel, packs codes and, with error feedback, leaves
// residual = v - qsgdValue(level). Buckets are a multiple of 32 elements, so every bucket's codes start on a byte
// and a SIMD kernel can hand any tail of 8 or 16 elements to the scalar code below.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compress/input_types.hpp"
#include "compress/payload_layout.hpp"
#include "tern/tern.h"

namespace tern::compress {

struct QsgdEncodeArgs {
  const void* x;  // n input elements of dtype
  ternDataType_t dtype;
  size_t n;
  float* residual;   // nullptr, or n values (error feedback)
  uint8_t* payload;  // qsgdPayloadBytes(n, bits, bucket) bytes
  int bits;          // 2, 4 or 8
  uint32_t bucket;   // multiple of 32
  RngKey key;        // makeRngKey(seed, step, kRngStreamQsgd)
  uint64_t offset;   // global index of element 0
};

void qsgdEncodeScalar(const QsgdEncodeArgs& args);
void qsgdEncodeAvx2(const QsgdEncodeArgs& args);
void qsgdEncodeAvx512(const QsgdEncodeArgs& args);

// out[i] (+)= decoded value of element i.
void qsgdDecodeScalar(const uint8_t* payload, size_t n, int bits, uint32_t bucket, float* out, bool accumulate);
void qsgdDecodeAvx2(const uint8_t* payload, size_t n, int bits, uint32_t bucket, float* out, bool accumulate);
void qsgdDecodeAvx512(const uint8_t* payload, size_t n, int bits, uint32_t bucket, float* out, bool accumulate);

// Pass 1 of one bucket: max |v| as a key; with error feedback stores v into residual.
template <class In, bool kEF>
uint32_t qsgdBucketMaxScalar(const typename In::Elem* x, size_t count, float* residual) {
  uint32_t m = 0;
  for (size_t i = 0; i < count; ++i) {
    float v = In::load(x, i);
    if constexpr (kEF) {
      v = addRn(v, residual[i]);
      residual[i] = v;
    }
    m = std::max(m, absKey(v));
  }
  return m;
}

// Pass 2 of elements [first, count) of one bucket (first a multiple of 8, so codes start on a byte). x, residual
// and codes point at the bucket's start; index is the global index of the bucket's first element.
template <class In, bool kEF>
void qsgdQuantizeScalar(const typename In::Elem* x, size_t first, size_t count, float* residual, uint8_t* codes,
                        int bits, float inv, float step, RngKey key, uint64_t index) {
  const float levels = static_cast<float>(qsgdMaxLevel(bits));
  uint8_t* out = codes + first * static_cast<size_t>(bits) / 8;
  uint32_t acc = 0;
  int filled = 0;
  for (size_t i = first; i < count; ++i) {
    float v = kEF ? residual[i] : In::load(x, i);
    uint32_t level = qsgdLevel(bitsFloat(absKey(v)), inv, levels, rngBits(key, index + i));
    uint32_t negative = floatBits(v) >> 31;
    if constexpr (kEF) residual[i] = subRn(v, qsgdValue(level, negative, step));
    acc |= (negative << (bits - 1) | level) << filled;
    filled += bits;
    if (filled == 8) {
      *out++ = static_cast<uint8_t>(acc);
      acc = 0;
      filled = 0;
    }
  }
  if (filled > 0) *out = static_cast<uint8_t>(acc);
}

// Decodes elements [first, count) of one bucket (first a multiple of 8); out and codes point at the bucket's start.
inline void qsgdDecodeRangeScalar(const uint8_t* codes, size_t first, size_t count, int bits, float step, float* out,
                                  bool accumulate) {
  const uint32_t mask = (1u << bits) - 1u;
  const uint32_t levelMask = mask >> 1;
  for (size_t i = first; i < count; ++i) {
    size_t bit = i * static_cast<size_t>(bits);
    uint32_t code = (codes[bit / 8] >> (bit % 8)) & mask;
    float d = qsgdValue(code & levelMask, code >> (bits - 1), step);
    out[i] = accumulate ? addRn(out[i], d) : d;
  }
}

inline float qsgdBucketScale(const uint8_t* payload, size_t bucketIndex) {
  float m;
  std::memcpy(&m, payload + 4 * bucketIndex, 4);
  return m;
}

}  // namespace tern::compress
