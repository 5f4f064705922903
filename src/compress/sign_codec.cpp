#include "compress/sign_codec.hpp"

#include <cstring>

#include "compress/isa.hpp"
#include "compress/payload_layout.hpp"
#include "compress/sign_kernels.hpp"

namespace tern::compress {
namespace {

CodecParams signParams(SignScale scale) {
  CodecParams p;
  p.kind = CodecKind::kSign;
  p.signScale = scale;
  return p;
}

}  // namespace

void settleSignCorrection(float* residual, size_t n, float scale) {
  switch (activeCodecIsa()) {
    case CodecIsa::kAvx512:
      return signResidualAvx512(residual, n, scale);
    case CodecIsa::kAvx2:
      return signResidualAvx2(residual, n, scale);
    case CodecIsa::kScalar:
      return signResidualScalar(residual, n, scale);
  }
}

SignCodec::SignCodec(SignScale scale) : Codec(signParams(scale)) {}

size_t SignCodec::payloadBytes(size_t n) const { return signPayloadBytes(n); }

// Pass 1 with the active instruction set; returns the chunk's scale (0 for an empty chunk).
float SignCodec::encodePass(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, float* residual,
                            std::optional<float> owed) const {
  SignEncodeArgs args{in, dtype, n, residual, payload + 4, params().signScale == SignScale::kRms};
  args.settleOwed = owed.has_value();
  args.owedScale = owed.value_or(0.0f);
  CodecIsa isa = activeCodecIsa();
  float sum = isa == CodecIsa::kAvx512 ? signEncodeAvx512(args)
              : isa == CodecIsa::kAvx2 ? signEncodeAvx2(args)
                                       : signEncodeScalar(args);
  float scale = n > 0 ? signScaleFromSum(sum, n, args.rms) : 0.0f;
  std::memcpy(payload, &scale, 4);
  return scale;
}

size_t SignCodec::encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                             const EncodeContext& /*ctx*/, float* residual) const {
  float scale = encodePass(in, dtype, n, payload, residual, std::nullopt);
  if (residual) settleSignCorrection(residual, n, scale);
  return signPayloadBytes(n);
}

size_t SignCodec::encodeOwingImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                                  std::optional<float> prior, float* residual, float* owed) const {
  *owed = encodePass(in, dtype, n, payload, residual, prior);
  return signPayloadBytes(n);
}

void SignCodec::decodeImpl(const uint8_t* payload, size_t /*bytes*/, size_t n, float* out, bool accumulate) const {
  float scale;
  std::memcpy(&scale, payload, 4);
  switch (activeCodecIsa()) {
    case CodecIsa::kAvx512:
      return signDecodeAvx512(payload + 4, n, scale, out, accumulate);
    case CodecIsa::kAvx2:
      return signDecodeAvx2(payload + 4, n, scale, out, accumulate);
    case CodecIsa::kScalar:
      return signDecodeScalar(payload + 4, n, scale, out, accumulate);
  }
}

}  // namespace tern::compress
