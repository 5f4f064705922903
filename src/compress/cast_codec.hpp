// fp16 / bf16 casting: every element rounded to nearest even into 16 bits (2x smaller than fp32). The baseline a
// compressed collective must beat. fp16 overflows to inf above 65504 (gradients beyond that need bf16 or scaling);
// bf16 keeps the fp32 range with 8 mantissa bits.
#pragma once

#include "compress/codec.hpp"

namespace tern::compress {

class CastCodec final : public Codec {
 public:
  // kind: CodecKind::kFp16 or CodecKind::kBf16.
  explicit CastCodec(CodecKind kind);

  size_t payloadBytes(size_t n) const override;

 protected:
  size_t encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, const EncodeContext& ctx,
                    float* residual) const override;
  void decodeImpl(const uint8_t* payload, size_t bytes, size_t n, float* out, bool accumulate) const override;
};

}  // namespace tern::compress
