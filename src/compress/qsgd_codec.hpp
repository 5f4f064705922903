// QSGD (Alistarh et al. 2017) with max-norm buckets: each bucket of `bucket` elements sends its max |x| (fp32) and,
// per element, a sign bit and a level l in [0, s], s = 2^(bits-1) - 1, chosen by unbiased stochastic rounding of
// |x| * s / max: E[decode] = x. Per element the variance is at most (max/s)^2 / 4. 8 bits with 512-element buckets
// keeps full accuracy in practice; 4 bits is 8x smaller than fp32, 2 bits 16x.
//
// The rounding draws come from rngBits(makeRngKey(seed, step, kRngStreamQsgd), global element index), so every
// implementation and every chunking of the tensor reproduces the same payload.
#pragma once

#include "compress/codec.hpp"

namespace tern::compress {

class QsgdCodec final : public Codec {
 public:
  // bits: 2, 4 or 8; bucket: a multiple of 32, at most 2^24. Throws ternInvalidArgument otherwise.
  QsgdCodec(int bits, uint32_t bucket = 512);

  size_t payloadBytes(size_t n) const override;

 protected:
  size_t encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, const EncodeContext& ctx,
                    float* residual) const override;
  void decodeImpl(const uint8_t* payload, size_t bytes, size_t n, float* out, bool accumulate) const override;
};

}  // namespace tern::compress
