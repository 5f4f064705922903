// Gradient codecs: the interface the compressed collectives call.
//
// A codec turns a chunk of a float tensor (fp32, fp16 or bf16 elements) into a byte payload and turns a payload
// back into fp32 values that are added into (or written to) an output chunk:
//
//   auto codec = makeCodec("qsgd:4");                        // codec_factory.hpp
//   std::vector<uint8_t> payload(codec->payloadBytes(n));
//   size_t bytes = codec->encode(x, ternFloat32, n, payload.data(), {seed, step, offset}, residual);
//   ... send `bytes` bytes; the receiver calls
//   codec->decode(payload.data(), bytes, n, out);            // out[i] += decoded[i]
//
// Chunks. A collective encodes a tensor as several chunks (one per peer in a two-phase allreduce). Scales are per
// chunk (sign) or per bucket inside the chunk (QSGD, buckets start at the chunk's first element), and random numbers
// are keyed by the *global* element index (EncodeContext::offset + i), so the payload of a chunk does not depend on
// how the rest of the tensor was split, and every rank/device that encodes the same chunk with the same seed and
// step gets the same bytes.
//
// Error feedback. encode() takes an optional residual (fp32, one per element of the chunk; see error_feedback.hpp
// for the per-tensor owner). With it, the codec encodes v = x + residual and leaves residual = v - decode(payload),
// in the same pass over the data (no temporary dense tensor). Sign needs the chunk's scale before it can subtract, so
// encode() takes a second pass over the residual; encodeOwing() instead leaves the correction owed to the next
// encode of the same chunk, which applies it while it reads the residual (error_feedback.hpp keeps the books).
//
// Determinism. The scalar, AVX2 and AVX-512 CPU kernels and the CUDA kernels (src/compress/cuda) produce the same
// payload, decoded values and residual bits for the same input, seed and step (see codec_math.hpp for the rules).
//
// Thread safety: a Codec is immutable after construction; encode/decode may run concurrently on different data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "tern/tern.h"

namespace tern::compress {

enum class CodecKind { kSign, kQsgd, kTopK, kFp16, kBf16 };

// Scale of the sign codec: mean |x| (EF-signSGD) or RMS ||x||2 / sqrt(n) (DeepSpeed 1-bit Adam).
enum class SignScale { kMeanAbs, kRms };

// Top-K selection: sampled threshold estimate (fast, keeps about k) or exact k largest |x|.
enum class TopKSelect { kSampled, kExact };

// Every parameter of a codec as plain data, so that other implementations (CUDA) and the cost model can read them.
struct CodecParams {
  CodecKind kind = CodecKind::kFp16;
  SignScale signScale = SignScale::kMeanAbs;
  int qsgdBits = 4;           // 2, 4 or 8 bits per element (1 sign bit + level)
  uint32_t qsgdBucket = 512;  // elements per max-norm bucket; a multiple of 32
  double topkRatio = 0.01;    // k = round(ratio * n), at least 1
  TopKSelect topkSelect = TopKSelect::kSampled;
  bool topkFp16Values = false;  // kept values sent as fp16 instead of fp32
};

// Per-call inputs of encode() besides the data.
struct EncodeContext {
  uint64_t seed = 0;    // shared by the ranks that must agree on random numbers
  uint64_t step = 0;    // training step (or any per-call counter): new random numbers each step
  uint64_t offset = 0;  // global index of the chunk's first element within its tensor
};

class Codec {
 public:
  virtual ~Codec() = default;

  const CodecParams& params() const { return params_; }
  CodecKind kind() const { return params_.kind; }

  // Canonical spec string ("qsgd:4:512"); makeCodec(spec()) builds an equal codec.
  std::string spec() const;

  // Payload size for a chunk of n elements: exact for dense codecs; for Top-K an upper bound (encode returns the
  // actual size). Independent of the input dtype.
  virtual size_t payloadBytes(size_t n) const = 0;

  // True when every encode of n elements writes exactly payloadBytes(n) bytes (all codecs but Top-K).
  bool fixedPayloadSize() const { return params_.kind != CodecKind::kTopK; }

  // Number of elements Top-K keeps out of n (0 for other codecs).
  size_t topkCount(size_t n) const;

  // Encodes in[0..n) (dtype fp32/fp16/bf16) into payload, which must hold payloadBytes(n) bytes; returns the number
  // of bytes written. residual: nullptr, or n fp32 values read and updated (error feedback). in, residual and
  // payload must not overlap. Throws tern::Error(ternInvalidArgument) for an unsupported dtype or size.
  size_t encode(const void* in, ternDataType_t dtype, size_t n, void* payload, const EncodeContext& ctx = {},
                float* residual = nullptr) const;

  // True for codecs whose error feedback can leave a correction owed (sign): see encodeOwing.
  bool canOweCorrection() const { return params_.kind == CodecKind::kSign; }

  // encode() with error feedback whose last step is left owed: the same payload, but residual[i] is left at v and
  // *owed receives the scale s such that the residual encode() would have left is signCorrected(v, s)
  // (sign_codec.hpp). `prior`, when set, is the correction this chunk's residual still owes from its previous
  // encode; it is applied to each residual value as it is read. Only where canOweCorrection(); residual not null.
  size_t encodeOwing(const void* in, ternDataType_t dtype, size_t n, void* payload, float* residual,
                     std::optional<float> prior, float* owed) const;

  // Decodes a payload of `bytes` bytes holding n elements: out[i] += value (accumulate) or out[i] = value.
  // Dense codecs need bytes == payloadBytes(n); Top-K payloads describe their own size, so bytes may be larger
  // (e.g. a receive buffer of payloadBytes(n)). Validates the payload (size, Top-K header and indices) before touching
  // out; a malformed payload throws tern::Error(ternInvalidArgument) (payloads come from the network).
  void decode(const void* payload, size_t bytes, size_t n, float* out, bool accumulate = true) const;

 protected:
  explicit Codec(const CodecParams& params) : params_(params) {}

  virtual size_t encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, const EncodeContext& ctx,
                            float* residual) const = 0;
  // encodeOwing after the generic checks; only codecs where canOweCorrection() override it.
  virtual size_t encodeOwingImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                                 std::optional<float> prior, float* residual, float* owed) const;
  // Called after the generic checks; validates codec-specific payload contents itself.
  virtual void decodeImpl(const uint8_t* payload, size_t bytes, size_t n, float* out, bool accumulate) const = 0;

 private:
  void checkEncode(const void* in, ternDataType_t dtype, size_t n, const void* payload) const;

  CodecParams params_;
};

// True for the element types codecs accept as input (fp32, fp16, bf16).
bool codecInputTypeSupported(ternDataType_t dtype);

}  // namespace tern::compress
