// ErrorFeedback: per-tensor residual state, chunked encodes, reset, checkpoint round trip and rejection of bad
// checkpoints; and the point of it all: with error feedback, the sum of what was sent tracks the sum of the inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "compress/codec_factory.hpp"
#include "compress/error_feedback.hpp"
#include "compress/isa.hpp"

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

// Encodes x in the given chunks through `ef` and, for reference, through the codec's own two-pass encode on a plain
// residual vector; every payload must be identical.
void encodeBoth(const Codec& codec, ErrorFeedback& ef, std::vector<float>& reference, const std::vector<float>& x,
                const std::vector<size_t>& cuts) {
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    const size_t off = cuts[k], len = cuts[k + 1] - off;
    std::vector<uint8_t> got(codec.payloadBytes(len)), want(codec.payloadBytes(len));
    ef.encode(codec, x.data() + off, ternFloat32, len, got.data(), {3, 0, off});
    codec.encode(x.data() + off, ternFloat32, len, want.data(), {3, 0, off}, reference.data() + off);
    ASSERT_EQ(got, want) << codec.spec() << " chunk at " << off;
  }
}

bool sameBits(std::span<const float> a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), b.size() * sizeof(float)) == 0;
}

// Sign's residual correction is owed to the next encode of a chunk instead of taking a pass of its own; on every
// instruction set that must give the two-pass encode's payloads and residual bits, across steps, when the chunking
// changes, when another codec takes over, and in a checkpoint taken while corrections are owed.
TEST(CodecErrorFeedback, OwedSignCorrectionsGiveTheTwoPassBits) {
  const size_t n = 70001;
  const std::vector<size_t> chunks = {0, 1, 8, 1031, 33000, 33001, n};
  const std::vector<size_t> shifted = {0, 500, 2000, 40000, n};
  for (CodecIsa isa : {CodecIsa::kScalar, CodecIsa::kAvx2, CodecIsa::kAvx512}) {
    if (!codecIsaSupported(isa)) {
      std::printf("note: %s not supported on this CPU, not compared\n", codecIsaName(isa));
      continue;
    }
    ScopedCodecIsa scoped(isa);
    for (const char* spec : {"sign", "sign:rms"}) {
      SCOPED_TRACE(std::string(spec) + " " + codecIsaName(isa));
      auto codec = makeCodec(spec);
      auto fp16 = makeCodec("fp16");
      ErrorFeedback ef(n);
      std::vector<float> reference(n, 0.0f);
      for (uint32_t step = 0; step < 3; ++step) encodeBoth(*codec, ef, reference, randomVector(n, 10 + step), chunks);
      const std::vector<uint8_t> checkpoint = ef.serialize();  // corrections are owed here
      encodeBoth(*codec, ef, reference, randomVector(n, 20), shifted);
      encodeBoth(*codec, ef, reference, randomVector(n, 21), chunks);
      encodeBoth(*fp16, ef, reference, randomVector(n, 22), chunks);
      encodeBoth(*codec, ef, reference, randomVector(n, 23), chunks);
      EXPECT_TRUE(sameBits(ef.residual(), reference));
      encodeBoth(*codec, ef, reference, randomVector(n, 24), chunks);  // after residual() settled everything

      ErrorFeedback restored;
      restored.deserialize(checkpoint);
      ErrorFeedback again(n);
      std::vector<float> replay(n, 0.0f);
      for (uint32_t step = 0; step < 3; ++step) encodeBoth(*codec, again, replay, randomVector(n, 10 + step), chunks);
      EXPECT_TRUE(sameBits(restored.residual(), replay)) << "the checkpoint holds the settled residual";
    }
  }
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
