// Top-K with error feedback over many calls on constant sparse inputs: what a call does not send waits in the
// residual, so after K calls every element's delivered total is K x minus what is still waiting. The expected side
// is computed here in double from the inputs and the decoded payloads only (never with the codec's kernels): an
// element's residual is K x - sum of its decoded values, and docs/COMPRESSION.md bounds it by 4 max|x| (an element
// waits a few calls for its turn, whatever its position in the buffer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "compress/codec_factory.hpp"
#include "compressed_bounds.hpp"

namespace tern::compress {
namespace {

// The sparse check data of docs/COMPRESSION.md (compressed_bounds.hpp): about 2 k nonzeros per rank, magnitudes
// in [1, 2), one owner per element; rank 0's share of a 4-rank job, what the chaos soak's rank 0 encodes.
std::vector<float> sparseInput(size_t n, double ratio) {
  std::vector<float> x(n);
  for (size_t j = 0; j < n; ++j) x[j] = static_cast<float>(compressed_check::sparseValue(0, 4, ratio, j));
  return x;
}

struct Waiting {
  double maxResidual = 0;  // max_j |K x_j - delivered_j|
  size_t at = 0;           // where
  double maxInput = 0;     // max_j |x_j|
};

// K encodes (one step each, as a compressor's calls are, from its default seed) with one error-feedback state, every
// payload decoded.
Waiting runCalls(const std::string& spec, size_t n, int calls) {
  auto codec = makeCodec(spec);
  const std::vector<float> x = sparseInput(n, codec->params().topkRatio);
  std::vector<float> residual(n, 0.0f), decoded(n);
  std::vector<uint8_t> payload(codec->payloadBytes(n));
  std::vector<double> delivered(n, 0.0);
  for (int k = 0; k < calls; ++k) {
    const size_t bytes = codec->encode(x.data(), ternFloat32, n, payload.data(),
                                       {0x7465726e, static_cast<uint64_t>(k), 0}, residual.data());
    codec->decode(payload.data(), bytes, n, decoded.data(), false);
    for (size_t j = 0; j < n; ++j) delivered[j] += decoded[j];
  }
  Waiting w;
  for (size_t j = 0; j < n; ++j) {
    w.maxInput = std::max(w.maxInput, std::fabs(static_cast<double>(x[j])));
    const double waiting = std::fabs(calls * static_cast<double>(x[j]) - delivered[j]);
    if (waiting > w.maxResidual) {
      w.maxResidual = waiting;
      w.at = j;
    }
  }
  return w;
}

TEST(CodecTopKFeedback, ExactSelectionLetsNoElementWaitLong) {
  const size_t n = 262144;
  const Waiting w = runCalls("topk:0.01:exact", n, 256);
  EXPECT_LE(w.maxResidual, 4 * w.maxInput) << "element " << w.at << " of " << n;
  std::printf("exact: largest residual %.3f max|x| at element %zu of %zu\n", w.maxResidual / w.maxInput, w.at, n);
}

// Sampled selection once cut the elements above a sampled threshold in index order when more than k reached it:
// the end of the buffer was passed over call after call and its residual grew with the number of calls (9 max|x|
// after 256 calls, near the end). It now sends the k largest of them, so no position waits longer than another.
TEST(CodecTopKFeedback, SampledSelectionLetsNoElementWaitLong) {
  const size_t n = 262144;
  const Waiting w = runCalls("topk:0.01", n, 256);
  EXPECT_LE(w.maxResidual, 4 * w.maxInput) << "element " << w.at << " of " << n;
  std::printf("sampled: largest residual %.3f max|x| at element %zu of %zu\n", w.maxResidual / w.maxInput, w.at, n);
}

}  // namespace
}  // namespace tern::compress
