// ErrorFeedback: per-tensor residual state, chunked encodes, reset, checkpoint round trip and rejection of bad
// checkpoints; and the point of it all: with error feedback, the sum of what was sent tracks the sum of the inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/error.hpp"
#include "compress/codec_factory.hpp"
#include "compress/error_feedback.hpp"

namespace tern::compress {
namespace {

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

TEST(CodecErrorFeedback, ChunkedEncodeUsesTheMatchingResidualSlice) {
  const size_t n = 3000, chunk = 1000;
  auto codec = makeCodec("sign");
  ErrorFeedback ef(n);
  auto x = randomVector(n, 1);
  std::vector<uint8_t> payload(codec->payloadBytes(chunk));
  for (size_t c = 0; c < n; c += chunk) {
    ef.encode(*codec, x.data() + c, ternFloat32, chunk, payload.data(), {1, 0, c});
    std::vector<float> d(chunk, 0.0f);
    codec->decode(payload.data(), payload.size(), chunk, d.data());
    for (size_t i = 0; i < chunk; ++i) ASSERT_EQ(ef.residual()[c + i], x[c + i] - d[i]);
  }
  EXPECT_THROW(ef.encode(*codec, x.data(), ternFloat32, chunk, payload.data(), {1, 0, n - 10}), Error);
}

TEST(CodecErrorFeedback, ResetAndResize) {
  ErrorFeedback ef(10);
  ef.residual()[3] = 2.0f;
  ef.reset();
  for (float r : ef.residual()) EXPECT_EQ(r, 0.0f);
  ef.resize(20);
  EXPECT_EQ(ef.size(), 20u);
}

TEST(CodecErrorFeedback, SerializeRoundTrip) {
  ErrorFeedback ef(1001);
  auto v = randomVector(1001, 2);
  std::copy(v.begin(), v.end(), ef.residual().begin());
  std::vector<uint8_t> bytes = ef.serialize();
  ErrorFeedback restored;
  restored.deserialize(bytes);
  ASSERT_EQ(restored.size(), ef.size());
  EXPECT_TRUE(std::equal(ef.residual().begin(), ef.residual().end(), restored.residual().begin()));
  ErrorFeedback empty;
  ErrorFeedback emptyRestored(5);
  emptyRestored.deserialize(empty.serialize());
  EXPECT_EQ(emptyRestored.size(), 0u);
}

TEST(CodecErrorFeedback, RejectsBadCheckpoints) {
  ErrorFeedback ef(100);
  ef.residual()[0] = 1.0f;
  std::vector<uint8_t> good = ef.serialize();
  ErrorFeedback target(7);
  auto corrupt = good;
  corrupt[20] ^= 1;  // a value bit
  EXPECT_THROW(target.deserialize(corrupt), Error);
  EXPECT_THROW(target.deserialize(std::vector<uint8_t>(good.begin(), good.end() - 1)), Error);
  EXPECT_THROW(target.deserialize(std::vector<uint8_t>(5, 0)), Error);
  auto badMagic = good;
  badMagic[0] = 'X';
  EXPECT_THROW(target.deserialize(badMagic), Error);
  auto badVersion = good;
  badVersion[6] = 9;
  EXPECT_THROW(target.deserialize(badVersion), Error);
  EXPECT_EQ(target.size(), 7u) << "a failed restore leaves the state unchanged";
}

// Telescoping: sum over steps of decoded_t = sum of x_t - final residual. With error feedback, the transmitted
// total converges to the true total for every codec (the property EF-SGD relies on).
TEST(CodecErrorFeedback, SentTotalTracksInputTotal) {
  for (const char* spec : {"sign", "sign:rms", "qsgd:2", "qsgd:4", "topk:0.01", "topk:0.05:exact", "fp16", "bf16"}) {
    auto codec = makeCodec(spec);
    const size_t n = 20000;
    ErrorFeedback ef(n);
    std::vector<double> sent(n, 0.0), truth(n, 0.0);
    std::vector<uint8_t> payload(codec->payloadBytes(n));
    for (uint64_t step = 0; step < 20; ++step) {
      auto x = randomVector(n, static_cast<uint32_t>(100 + step));
      for (size_t i = 0; i < n; ++i) truth[i] += x[i];
      size_t bytes = ef.encode(*codec, x.data(), ternFloat32, n, payload.data(), {9, step, 0});
      std::vector<float> d(n, 0.0f);
      codec->decode(payload.data(), bytes, n, d.data());
      for (size_t i = 0; i < n; ++i) sent[i] += d[i];
    }
    double maxErr = 0;
    for (size_t i = 0; i < n; ++i) {
      maxErr = std::max(maxErr, std::fabs(truth[i] - sent[i] - ef.residual()[i]));
    }
    EXPECT_LT(maxErr, 1e-3) << spec;
  }
}

}  // namespace
}  // namespace tern::compress
