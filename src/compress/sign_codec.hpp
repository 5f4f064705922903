// 1-bit sign compression: one bit per element (1 = x >= 0, so 0 counts as positive) and one fp32 scale per chunk.
// Decoded value: +scale or -scale. The scale is mean |x| (EF-signSGD, the default) or the RMS ||x||2/sqrt(n) that
// DeepSpeed's 1-bit Adam uses. 32x smaller than fp32; meant to be used with error feedback.
#pragma once

#include "compress/codec.hpp"

namespace tern::compress {

// Applies an owed correction (Codec::encodeOwing) to n residual values: r = r - (r >= 0 ? scale : -scale).
void settleSignCorrection(float* residual, size_t n, float scale);

class SignCodec final : public Codec {
 public:
  explicit SignCodec(SignScale scale = SignScale::kMeanAbs);

  size_t payloadBytes(size_t n) const override;

 protected:
  size_t encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, const EncodeContext& ctx,
                    float* residual) const override;
  size_t encodeOwingImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, std::optional<float> prior,
                         float* residual, float* owed) const override;
  void decodeImpl(const uint8_t* payload, size_t bytes, size_t n, float* out, bool accumulate) const override;

 private:
  float encodePass(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, float* residual,
                   std::optional<float> owed) const;
};

}  // namespace tern::compress
