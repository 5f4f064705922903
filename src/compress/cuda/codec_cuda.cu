// Entry points of the CUDA codecs (codec_cuda.hpp): argument checks shared by every codec, then the per-codec
// launchers (kernels.cuh).
#include "compress/cuda/codec_cuda.hpp"
#include "compress/cuda/device_common.cuh"
#include "compress/cuda/kernels.cuh"
#include "compress/payload_layout.hpp"

namespace tern::compress::cuda {

size_t workspaceBytes(const Codec& codec, size_t n) {
  switch (codec.kind()) {
    case CodecKind::kSign:
      return signWorkspaceBytes(n);
    case CodecKind::kTopK:
      return topkWorkspaceBytes(codec.params(), n);
    default:
      return 0;
  }
}

size_t encode(const Codec& codec, const void* in, ternDataType_t dtype, size_t n, void* payload,
              const EncodeContext& ctx, float* residual, void* workspace, size_t workspaceSize, cudaStream_t stream) {
  const std::string spec = codec.spec();
  if (!codecInputTypeSupported(dtype)) {
    throwError(ternInvalidArgument, "CUDA codec %s: input dtype %d is not supported (fp32, fp16 and bf16 are)",
               spec.c_str(), static_cast<int>(dtype));
  }
  if ((n > 0 && in == nullptr) || (payload == nullptr && codec.payloadBytes(n) > 0)) {
    throwError(ternInvalidArgument, "CUDA codec %s: encode of %zu elements with a null pointer", spec.c_str(), n);
  }
  if (reinterpret_cast<uintptr_t>(payload) % 4 != 0) {
    throwError(ternInvalidArgument, "CUDA codec %s: payload pointer %p is not 4-byte aligned", spec.c_str(), payload);
  }
  if (workspaceSize < workspaceBytes(codec, n) || (workspaceBytes(codec, n) > 0 && workspace == nullptr)) {
    throwError(ternInvalidArgument, "CUDA codec %s: workspace of %zu bytes, %zu needed for %zu elements", spec.c_str(),
               workspaceSize, workspaceBytes(codec, n), n);
  }
  if (codec.kind() == CodecKind::kTopK && n > 0xffffffffull) {
    throwError(ternInvalidArgument, "CUDA codec %s: a chunk holds at most 2^32-1 elements, not %zu", spec.c_str(), n);
  }
  auto* p = static_cast<uint8_t*>(payload);
  const CodecParams& params = codec.params();
  switch (codec.kind()) {
    case CodecKind::kSign:
      signEncode(params, in, dtype, n, p, residual, workspace, stream);
      break;
    case CodecKind::kQsgd:
      qsgdEncode(params, in, dtype, n, p, ctx, residual, stream);
      break;
    case CodecKind::kTopK:
      topkEncode(params, in, dtype, n, p, ctx, residual, workspace, stream);
      break;
    case CodecKind::kFp16:
    case CodecKind::kBf16:
      castEncode(params, in, dtype, n, p, residual, stream);
      break;
  }
  return codec.payloadBytes(n);
}

void decode(const Codec& codec, const void* payload, size_t n, float* out, bool accumulate, cudaStream_t stream) {
  if (n > 0 && (payload == nullptr || out == nullptr)) {
    throwError(ternInvalidArgument, "CUDA codec %s: decode of %zu elements with a null pointer", codec.spec().c_str(),
               n);
  }
  if (reinterpret_cast<uintptr_t>(payload) % 4 != 0) {
    throwError(ternInvalidArgument, "CUDA codec %s: payload pointer %p is not 4-byte aligned", codec.spec().c_str(),
               payload);
  }
  const auto* p = static_cast<const uint8_t*>(payload);
  const CodecParams& params = codec.params();
  switch (codec.kind()) {
    case CodecKind::kSign:
      return signDecode(p, n, out, accumulate, stream);
    case CodecKind::kQsgd:
      return qsgdDecode(params, p, n, out, accumulate, stream);
    case CodecKind::kTopK:
      return topkDecode(params, p, n, out, accumulate, stream);
    case CodecKind::kFp16:
    case CodecKind::kBf16:
      return castDecode(params, p, n, out, accumulate, stream);
  }
}

}  // namespace tern::compress::cuda
