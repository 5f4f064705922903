// Top-K sparsification (DGC-style): keeps the k = round(ratio * n) elements of largest |x| of a chunk and sends
// (index, value) pairs sorted by index (payload_layout.hpp); the receiver scatter-adds them. Meant for use with
// error feedback, which keeps everything not sent in the residual.
//
// Two selections:
//  - exact: exactly k elements, the k largest |x|, ties broken by the lower index (radix select, topk_kernels.hpp);
//  - sampled (the fast path): estimates the threshold T as the matching order statistic of a random sample of the
//    chunk; keeps every element at or above T when at most k are, else the k largest of them (ties by the lower
//    index: then the exact selection's set). Keeps about k (a few percent below, never above), always the largest.
// Chunks too small for sampling to pay off (under 2 sample sizes) always use the exact selection.
#pragma once

#include "compress/codec.hpp"

namespace tern::compress {

// How one encode of n elements runs; shared with the CUDA implementation so both pick the same numbers.
struct TopkPlan {
  size_t k = 0;           // elements to keep (the cap)
  bool sampled = false;   // sampled threshold (else exact radix select)
  size_t sampleSize = 0;  // m random positions, rngBits(makeRngKey(seed, step, kRngStreamTopkSample), offset + j)
  size_t sampleRank = 0;  // the threshold is the sampleRank-th largest sampled key (1-based)
};

// Expected number of kept elements in the sample: sets the sample size, m = max(4096, 256 n / k); the relative
// spread of the kept count is about 1/sqrt(256) = 6%.
inline constexpr size_t kTopkSampleKept = 256;
inline constexpr size_t kTopkMinSample = 4096;

TopkPlan topkPlan(const CodecParams& params, size_t n);

class TopKCodec final : public Codec {
 public:
  // ratio in (0, 1]. Throws ternInvalidArgument otherwise.
  explicit TopKCodec(double ratio = 0.01, TopKSelect select = TopKSelect::kSampled, bool fp16Values = false);

  // Upper bound: the payload of k kept elements.
  size_t payloadBytes(size_t n) const override;

  // Size of a payload holding `count` kept elements (encode's result).
  size_t payloadBytesForCount(size_t count) const;

 protected:
  size_t encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, const EncodeContext& ctx,
                    float* residual) const override;
  void decodeImpl(const uint8_t* payload, size_t bytes, size_t n, float* out, bool accumulate) const override;
};

}  // namespace tern::compress
