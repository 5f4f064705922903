#include "compress/qsgd_codec.hpp"

#include "base/error.hpp"
#include "compress/isa.hpp"
#include "compress/payload_layout.hpp"
#include "compress/qsgd_kernels.hpp"

namespace tern::compress {
namespace {

CodecParams qsgdParams(int bits, uint32_t bucket) {
  if (bits != 2 && bits != 4 && bits != 8) {
    throwError(ternInvalidArgument, "qsgd: %d bits per element is not supported (2, 4 or 8)", bits);
  }
  // Multiples of 32 keep every bucket's codes byte-aligned for all widths, and match a CUDA warp.
  if (bucket == 0 || bucket % 32 != 0 || bucket > (1u << 24)) {
    throwError(ternInvalidArgument, "qsgd: bucket size %u must be a positive multiple of 32, at most 2^24", bucket);
  }
  CodecParams p;
  p.kind = CodecKind::kQsgd;
  p.qsgdBits = bits;
  p.qsgdBucket = bucket;
  return p;
}

}  // namespace

QsgdCodec::QsgdCodec(int bits, uint32_t bucket) : Codec(qsgdParams(bits, bucket)) {}

size_t QsgdCodec::payloadBytes(size_t n) const { return qsgdPayloadBytes(n, params().qsgdBits, params().qsgdBucket); }

size_t QsgdCodec::encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, const EncodeContext& ctx,
                             float* residual) const {
  QsgdEncodeArgs args{in,
                      dtype,
                      n,
                      residual,
                      payload,
                      params().qsgdBits,
                      params().qsgdBucket,
                      makeRngKey(ctx.seed, ctx.step, kRngStreamQsgd),
                      ctx.offset};
  switch (activeCodecIsa()) {
    case CodecIsa::kAvx512:
      qsgdEncodeAvx512(args);
      break;
    case CodecIsa::kAvx2:
      qsgdEncodeAvx2(args);
      break;
    case CodecIsa::kScalar:
      qsgdEncodeScalar(args);
      break;
  }
  return payloadBytes(n);
}

void QsgdCodec::decodeImpl(const uint8_t* payload, size_t /*bytes*/, size_t n, float* out, bool accumulate) const {
  const int bits = params().qsgdBits;
  const uint32_t bucket = params().qsgdBucket;
  switch (activeCodecIsa()) {
    case CodecIsa::kAvx512:
      return qsgdDecodeAvx512(payload, n, bits, bucket, out, accumulate);
    case CodecIsa::kAvx2:
      return qsgdDecodeAvx2(payload, n, bits, bucket, out, accumulate);
    case CodecIsa::kScalar:
      return qsgdDecodeScalar(payload, n, bits, bucket, out, accumulate);
  }
}

}  // namespace tern::compress
