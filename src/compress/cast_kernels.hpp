// Kernels of the fp16/bf16 casting codecs (cast_codec.hpp): round to nearest even on encode (with error feedback,
// residual = v - widen(round(v)) in the same pass), widen and add on decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "compress/input_types.hpp"
#include "tern/tern.h"

namespace tern::compress {

struct CastEncodeArgs {
  const void* x;  // n input elements of dtype
  ternDataType_t dtype;
  size_t n;
  float* residual;  // nullptr, or n values (error feedback)
  uint8_t* out;     // 2n bytes
  bool bf16;        // bf16 instead of fp16
};

void castEncodeScalar(const CastEncodeArgs& args);
void castEncodeAvx2(const CastEncodeArgs& args);
void castEncodeAvx512(const CastEncodeArgs& args);

void castDecodeScalar(const uint8_t* in, size_t n, bool bf16, float* out, bool accumulate);
void castDecodeAvx2(const uint8_t* in, size_t n, bool bf16, float* out, bool accumulate);
void castDecodeAvx512(const uint8_t* in, size_t n, bool bf16, float* out, bool accumulate);

TERN_HD uint16_t castRound(float v, bool bf16) { return bf16 ? floatToBf16Bits(v) : floatToHalfBits(v); }
TERN_HD float castWiden(uint16_t h, bool bf16) { return bf16 ? bf16BitsToFloat(h) : halfBitsToFloat(h); }

// Elements [first, n): the reference, also the SIMD kernels' tail.
template <class In, bool kEF, bool kBf16>
void castEncodeRangeScalar(const CastEncodeArgs& a, size_t first) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  for (size_t i = first; i < a.n; ++i) {
    float v = In::load(x, i);
    if constexpr (kEF) v = addRn(v, a.residual[i]);
    uint16_t h = castRound(v, kBf16);
    std::memcpy(a.out + 2 * i, &h, 2);
    if constexpr (kEF) a.residual[i] = subRn(v, castWiden(h, kBf16));
  }
}

inline void castDecodeRangeScalar(const uint8_t* in, size_t first, size_t n, bool bf16, float* out, bool accumulate) {
  for (size_t i = first; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    float d = castWiden(h, bf16);
    out[i] = accumulate ? addRn(out[i], d) : d;
  }
}

// Calls fn(In{}, kEF, kBf16) as integral constants for the run-time choices.
template <class Fn>
void withCastVariant(const CastEncodeArgs& a, Fn&& fn) {
  withInputType(a.dtype, [&](auto in) {
    auto pick = [&](auto ef) {
      if (a.bf16) {
        fn(in, ef, std::true_type{});
      } else {
        fn(in, ef, std::false_type{});
      }
    };
    a.residual ? pick(std::true_type{}) : pick(std::false_type{});
  });
}

}  // namespace tern::compress
