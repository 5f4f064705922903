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

SignCodec::SignCodec(SignScale scale) : Codec(signParams(scale)) {}

size_t SignCodec::payloadBytes(size_t n) const { return signPayloadBytes(n); }

size_t SignCodec::encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                             const EncodeContext& /*ctx*/, float* residual) const {
  SignEncodeArgs args{in, dtype, n, residual, payload + 4, params().signScale == SignScale::kRms};
  CodecIsa isa = activeCodecIsa();
  float sum = isa == CodecIsa::kAvx512 ? signEncodeAvx512(args)
              : isa == CodecIsa::kAvx2 ? signEncodeAvx2(args)
                                       : signEncodeScalar(args);
  float scale = n > 0 ? signScaleFromSum(sum, n, args.rms) : 0.0f;
  std::memcpy(payload, &scale, 4);
  if (residual) {
    if (isa == CodecIsa::kAvx512) {
      signResidualAvx512(residual, n, scale);
    } else if (isa == CodecIsa::kAvx2) {
      signResidualAvx2(residual, n, scale);
    } else {
      signResidualScalar(residual, n, scale);
    }
  }
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
