#include "compress/codec.hpp"

#include <charconv>
#include <cmath>

#include "base/dtype.hpp"
#include "base/error.hpp"

namespace tern::compress {

bool codecInputTypeSupported(ternDataType_t dtype) {
  return dtype == ternFloat32 || dtype == ternFloat16 || dtype == ternBfloat16;
}

std::string Codec::spec() const {
  switch (params_.kind) {
    case CodecKind::kSign:
      return params_.signScale == SignScale::kRms ? "sign:rms" : "sign";
    case CodecKind::kQsgd:
      return format("qsgd:%d:%u", params_.qsgdBits, params_.qsgdBucket);
    case CodecKind::kTopK: {
      char ratio[32];
      auto res = std::to_chars(ratio, ratio + sizeof ratio, params_.topkRatio);  // shortest round-trip form
      std::string s = "topk:" + std::string(ratio, res.ptr);
      if (params_.topkSelect == TopKSelect::kExact) s += ":exact";
      if (params_.topkFp16Values) s += ":fp16";
      return s;
    }
    case CodecKind::kFp16:
      return "fp16";
    case CodecKind::kBf16:
      return "bf16";
  }
  return "invalid";
}

size_t Codec::topkCount(size_t n) const {
  if (params_.kind != CodecKind::kTopK || n == 0) return 0;
  double k = std::nearbyint(params_.topkRatio * static_cast<double>(n));
  if (k < 1.0) return 1;
  if (k >= static_cast<double>(n)) return n;
  return static_cast<size_t>(k);
}

void Codec::checkEncode(const void* in, ternDataType_t dtype, size_t n, const void* payload) const {
  if (!codecInputTypeSupported(dtype)) {
    throwError(ternInvalidArgument, "codec %s: input dtype %s is not supported (fp32, fp16 and bf16 are)",
               spec().c_str(), validDataType(dtype) ? dataTypeName(dtype) : "invalid");
  }
  // Even an empty chunk has a payload for some codecs (sign's scale, Top-K's header).
  if ((n > 0 && in == nullptr) || (payload == nullptr && payloadBytes(n) > 0)) {
    throwError(ternInvalidArgument, "codec %s: encode of %zu elements with a null %s", spec().c_str(), n,
               payload == nullptr ? "payload" : "input");
  }
  if (params_.kind == CodecKind::kTopK && n > 0xffffffffull) {
    throwError(ternInvalidArgument, "codec %s: a chunk holds at most 2^32-1 elements (32-bit indices), not %zu",
               spec().c_str(), n);
  }
}

size_t Codec::encode(const void* in, ternDataType_t dtype, size_t n, void* payload, const EncodeContext& ctx,
                     float* residual) const {
  checkEncode(in, dtype, n, payload);
  return encodeImpl(in, dtype, n, static_cast<uint8_t*>(payload), ctx, residual);
}

size_t Codec::encodeOwing(const void* in, ternDataType_t dtype, size_t n, void* payload, float* residual,
                          std::optional<float> prior, float* owed) const {
  checkEncode(in, dtype, n, payload);
  if (!canOweCorrection() || owed == nullptr || (n > 0 && residual == nullptr)) {
    throwError(ternInternalError, "codec %s: encodeOwing needs a codec that can owe a correction, a residual and *owed",
               spec().c_str());
  }
  return encodeOwingImpl(in, dtype, n, static_cast<uint8_t*>(payload), prior, residual, owed);
}

size_t Codec::encodeOwingImpl(const void* /*in*/, ternDataType_t /*dtype*/, size_t /*n*/, uint8_t* /*payload*/,
                              std::optional<float> /*prior*/, float* /*residual*/, float* /*owed*/) const {
  throwError(ternInternalError, "codec %s cannot owe an error-feedback correction", spec().c_str());
}

void Codec::decode(const void* payload, size_t bytes, size_t n, float* out, bool accumulate) const {
  if ((n > 0 && out == nullptr) || (payload == nullptr && (n > 0 || bytes > 0))) {
    throwError(ternInvalidArgument, "codec %s: decode of %zu elements with a null %s", spec().c_str(), n,
               payload == nullptr ? "payload" : "output");
  }
  if (fixedPayloadSize() && bytes != payloadBytes(n)) {
    throwError(ternInvalidArgument, "codec %s: payload of %zu bytes for %zu elements, expected %zu bytes",
               spec().c_str(), bytes, n, payloadBytes(n));
  }
  decodeImpl(static_cast<const uint8_t*>(payload), bytes, n, out, accumulate);
}

}  // namespace tern::compress
