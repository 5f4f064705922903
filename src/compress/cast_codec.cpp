#include "compress/cast_codec.hpp"

#include "base/error.hpp"
#include "compress/cast_kernels.hpp"
#include "compress/isa.hpp"
#include "compress/payload_layout.hpp"

namespace tern::compress {
namespace {

CodecParams castParams(CodecKind kind) {
  if (kind != CodecKind::kFp16 && kind != CodecKind::kBf16) {
    throwError(ternInvalidArgument, "cast codec: kind %d is neither fp16 nor bf16", static_cast<int>(kind));
  }
  CodecParams p;
  p.kind = kind;
  return p;
}

}  // namespace

CastCodec::CastCodec(CodecKind kind) : Codec(castParams(kind)) {}

size_t CastCodec::payloadBytes(size_t n) const { return castPayloadBytes(n); }

size_t CastCodec::encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                             const EncodeContext& /*ctx*/, float* residual) const {
  CastEncodeArgs args{in, dtype, n, residual, payload, kind() == CodecKind::kBf16};
  switch (activeCodecIsa()) {
    case CodecIsa::kAvx512:
      castEncodeAvx512(args);
      break;
    case CodecIsa::kAvx2:
      castEncodeAvx2(args);
      break;
    case CodecIsa::kScalar:
      castEncodeScalar(args);
      break;
  }
  return castPayloadBytes(n);
}

void CastCodec::decodeImpl(const uint8_t* payload, size_t /*bytes*/, size_t n, float* out, bool accumulate) const {
  const bool bf16 = kind() == CodecKind::kBf16;
  switch (activeCodecIsa()) {
    case CodecIsa::kAvx512:
      return castDecodeAvx512(payload, n, bf16, out, accumulate);
    case CodecIsa::kAvx2:
      return castDecodeAvx2(payload, n, bf16, out, accumulate);
    case CodecIsa::kScalar:
      return castDecodeScalar(payload, n, bf16, out, accumulate);
  }
}

}  // namespace tern::compress
