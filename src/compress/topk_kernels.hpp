// Kernels of the Top-K codec (topk_codec.hpp).
//
// Selection is a threshold rule on integer keys k(v) = |v| bits (absKey), applied in index order by one pass:
//   keep v if k(v) > T, or k(v) == T while fewer than tieBudget ties were kept; stop keeping at cap elements.
// Exact Top-K finds T (the key of the k-th largest |v|) by a 3-pass radix select (histograms of key bits 30-21,
// 20-10, 9-0) and keeps exactly k with ties broken by lower index: the same set nth_element would give, without a
// dense temporary, and the same algorithm a GPU runs. Sampled Top-K estimates T from a random sample and gathers
// k(v) >= T with this pass; when more than k qualify, it keeps the k largest of them (topk_codec.cpp).
//
// Error feedback: the selection pass leaves residual = v - decoded for kept elements (0 for fp32 values) and
// residual = v for the others. Where v is needed in several passes (exact), the first pass stores v into the
// residual and later passes read it from there (Source::kResidual).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "compress/input_types.hpp"
#include "tern/tern.h"

namespace tern::compress {

// Where the selection reads v from.
enum class TopkSource {
  kInput,             // v = x (no error feedback)
  kInputAndResidual,  // v = x + residual (error feedback, first touch)
  kResidual,          // v = residual (error feedback, v stored by an earlier pass)
};

struct TopkSelectArgs {
  const void* x;  // input of dtype (unused for kResidual)
  ternDataType_t dtype;
  size_t n;
  float* residual;  // n values, or nullptr for kInput
  TopkSource source;
  uint32_t threshold;  // T
  size_t tieBudget;    // ties (key == T) that may be kept
  size_t cap;          // at most this many kept
  bool fp16Values;
  uint8_t* indices;  // cap slots of 4 bytes (u32, unaligned allowed)
  uint8_t* values;   // cap slots of 4 (fp32) or 2 (fp16) bytes
};

// Runs the selection pass; returns the number of kept elements.
size_t topkSelectScalar(const TopkSelectArgs& args);
size_t topkSelectAvx2(const TopkSelectArgs& args);
size_t topkSelectAvx512(const TopkSelectArgs& args);

// Value of v as sent (fp32 as is, or rounded to fp16) and as decoded.
TERN_HD float topkDecodedValue(float v, bool fp16Values) {
  return fp16Values ? halfBitsToFloat(floatToHalfBits(v)) : v;
}

// Running state of a selection pass, so a SIMD kernel can hand its tail to the scalar code.
struct TopkSelectState {
  size_t count = 0;
  size_t ties = 0;
};

template <class In, TopkSource kSource>
TERN_HD float topkLoad(const typename In::Elem* x, const float* residual, size_t i) {
  if constexpr (kSource == TopkSource::kResidual) return residual[i];
  if constexpr (kSource == TopkSource::kInputAndResidual) return addRn(In::load(x, i), residual[i]);
  return In::load(x, i);
}

// Scalar selection of elements [first, n) (the reference semantics).
template <class In, TopkSource kSource>
void topkSelectRangeScalar(const TopkSelectArgs& a, size_t first, TopkSelectState& s) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  for (size_t i = first; i < a.n; ++i) {
    float v = topkLoad<In, kSource>(x, a.residual, i);
    uint32_t key = absKey(v);
    bool keep = false;
    if (s.count < a.cap) {
      if (key > a.threshold) {
        keep = true;
      } else if (key == a.threshold && s.ties < a.tieBudget) {
        keep = true;
        ++s.ties;
      }
    }
    float r = v;
    if (keep) {
      uint32_t index = static_cast<uint32_t>(i);
      std::memcpy(a.indices + 4 * s.count, &index, 4);
      if (a.fp16Values) {
        uint16_t h = floatToHalfBits(v);
        std::memcpy(a.values + 2 * s.count, &h, 2);
      } else {
        std::memcpy(a.values + 4 * s.count, &v, 4);
      }
      ++s.count;
      r = subRn(v, topkDecodedValue(v, a.fp16Values));
    }
    if constexpr (kSource != TopkSource::kInput) a.residual[i] = r;
  }
}

// Calls fn(In{}, std::integral_constant<TopkSource, source>{}) for the run-time input type and source.
template <class Fn>
decltype(auto) withTopkSource(const TopkSelectArgs& a, Fn&& fn) {
  return withInputType(a.source == TopkSource::kResidual ? ternFloat32 : a.dtype, [&](auto in) {
    switch (a.source) {
      case TopkSource::kInput:
        return fn(in, std::integral_constant<TopkSource, TopkSource::kInput>{});
      case TopkSource::kInputAndResidual:
        return fn(in, std::integral_constant<TopkSource, TopkSource::kInputAndResidual>{});
      default:
        return fn(in, std::integral_constant<TopkSource, TopkSource::kResidual>{});
    }
  });
}

}  // namespace tern::compress
