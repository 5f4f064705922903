// Kernels of the sign codec (sign_codec.hpp), one set per instruction set, all computing the same bits.
//
// Encoding is one pass without error feedback: sign bits and the scale sum come out of the same read. With error
// feedback, pass 1 also stores v = x + residual into the residual, and the decoded value (+-scale) must then be
// subtracted once the scale is known. That correction either runs as a pass of its own (signResidual*) or is owed
// until the next encode of the same chunk, whose pass 1 applies it to each residual value as it reads it
// (EfMode::kSettle; error_feedback.hpp keeps what is owed): one read and write of the residual per encode instead of
// two, with the same float operations, so the same bits. The sum follows pairwise_sum.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/input_types.hpp"
#include "compress/pairwise_sum.hpp"
#include "tern/tern.h"

namespace tern::compress {

struct SignEncodeArgs {
  const void* x;  // n input elements of dtype
  ternDataType_t dtype;
  size_t n;
  float* residual;  // nullptr, or n values: replaced by v = x + residual
  uint8_t* bits;    // ceil(n/8) bytes
  bool rms;         // sum v^2 instead of |v|
  // With a residual: the scale whose correction the residual still owes (see above), applied to each residual value
  // r as r - (r >= 0 ? owedScale : -owedScale) before it is added to x.
  bool settleOwed = false;
  float owedScale = 0.0f;
};

// How pass 1 treats the residual: none, add it, or settle the owed correction and then add it.
enum class EfMode { kNone, kAdd, kSettle };

// The sign correction: r - (r >= 0 ? scale : -scale). NaN compares false, so it subtracts -scale, as the SIMD
// kernels' ordered comparisons do.
TERN_HD float signCorrected(float r, float scale) { return subRn(r, r >= 0.0f ? scale : -scale); }

// Pass 1: writes the sign bits; returns sum |v| (or sum v^2) in the order of pairwise_sum.hpp.
float signEncodeScalar(const SignEncodeArgs& args);
float signEncodeAvx2(const SignEncodeArgs& args);
float signEncodeAvx512(const SignEncodeArgs& args);

// The correction as a pass of its own: residual[i] = signCorrected(residual[i], scale).
void signResidualScalar(float* residual, size_t n, float scale);
void signResidualAvx2(float* residual, size_t n, float scale);
void signResidualAvx512(float* residual, size_t n, float scale);

// out[i] (+)= bit ? scale : -scale.
void signDecodeScalar(const uint8_t* bits, size_t n, float scale, float* out, bool accumulate);
void signDecodeAvx2(const uint8_t* bits, size_t n, float scale, float* out, bool accumulate);
void signDecodeAvx512(const uint8_t* bits, size_t n, float scale, float* out, bool accumulate);

// The scale from the pass-1 sum: mean |v| or sqrt(mean v^2). n > 0.
TERN_HD float signScaleFromSum(float sum, uint64_t n, bool rms) {
  float mean = divRn(sum, countToFloat(n));
  return rms ? sqrtRn(mean) : mean;
}

// Pass 1 over one block of kSumBlock elements or fewer (x, residual and bits point at the block's start); returns
// the block sum. The reference definition, also used by the SIMD kernels for a chunk's last, short block.
template <class In, EfMode kEf, bool kRms>
float signBlockScalar(const typename In::Elem* x, size_t count, float* residual, uint8_t* bits, float owedScale) {
  float lane[kSumLanes] = {};
  for (size_t i = 0; i < count; i += 8) {
    uint32_t byte = 0;
    for (size_t j = 0; j < 8 && i + j < count; ++j) {
      size_t e = i + j;
      float v = In::load(x, e);
      if constexpr (kEf != EfMode::kNone) {
        float r = residual[e];
        if constexpr (kEf == EfMode::kSettle) r = signCorrected(r, owedScale);
        v = addRn(v, r);
        residual[e] = v;
      }
      float term = kRms ? mulRn(v, v) : bitsFloat(absKey(v));
      lane[e % kSumLanes] = addRn(lane[e % kSumLanes], term);
      byte |= static_cast<uint32_t>(v >= 0.0f) << j;
    }
    bits[i / 8] = static_cast<uint8_t>(byte);
  }
  return foldLanes(lane);
}

}  // namespace tern::compress
