// QSGD: payload size, level range, unbiasedness and the variance bound of stochastic rounding, reproducibility
// (same seed/step -> same bytes, different chunking -> same draws), and the error-feedback identity.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.hpp"
#include "compress/codec_factory.hpp"
#include "compress/payload_layout.hpp"
#include "compress/qsgd_codec.hpp"

namespace tern::compress {
namespace {

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

std::vector<float> roundTrip(const Codec& codec, const std::vector<float>& x, EncodeContext ctx) {
  std::vector<uint8_t> payload(codec.payloadBytes(x.size()));
  codec.encode(x.data(), ternFloat32, x.size(), payload.data(), ctx);
  std::vector<float> out(x.size(), 0.0f);
  codec.decode(payload.data(), payload.size(), x.size(), out.data());
  return out;
}

TEST(CodecQsgd, PayloadSizeIsExact) {
  for (int bits : {2, 4, 8}) {
    for (uint32_t bucket : {32u, 512u}) {
      QsgdCodec codec(bits, bucket);
      for (size_t n : {0, 1, 31, 32, 33, 511, 512, 513, 10000}) {
        size_t expected = 4 * ((n + bucket - 1) / bucket) + (n * bits + 7) / 8;
        EXPECT_EQ(codec.payloadBytes(n), expected);
        auto x = randomVector(n, 1);
        std::vector<uint8_t> payload(expected + 8, 0xab);
        EXPECT_EQ(codec.encode(x.data(), ternFloat32, n, payload.data()), expected);
        for (size_t i = expected; i < payload.size(); ++i) ASSERT_EQ(payload[i], 0xab);
      }
    }
  }
}

// Every decoded value is a multiple of max/s with |level| <= s and the sign of the input, and the bucket's max
// element decodes to +-max or one level below.
TEST(CodecQsgd, LevelsAndScalesAreInRange) {
  for (int bits : {2, 4, 8}) {
    QsgdCodec codec(bits, 128);
    const size_t n = 1000;
    auto x = randomVector(n, 2);
    auto out = roundTrip(codec, x, {1, 2, 0});
    const float s = static_cast<float>(qsgdMaxLevel(bits));
    for (size_t b = 0; b < n; b += 128) {
      float m = 0;
      for (size_t i = b; i < std::min(n, b + 128); ++i) m = std::max(m, std::fabs(x[i]));
      const float step = m / s;
      for (size_t i = b; i < std::min(n, b + 128); ++i) {
        float level = out[i] / step;
        ASSERT_NEAR(level, std::nearbyint(level), 1e-3f);
        ASSERT_LE(std::fabs(level), s + 1e-3f);
        if (out[i] != 0.0f) {
          ASSERT_EQ(std::signbit(out[i]), std::signbit(x[i]));
        }
        // Stochastic rounding only picks one of the two neighbouring levels.
        ASSERT_LE(std::fabs(std::fabs(out[i]) - std::fabs(x[i])), step * 1.0001f);
      }
    }
  }
}

// E[decode(encode(x))] = x: the mean over many seeds converges at the rate the per-element variance allows, and
// the empirical variance stays within the bound p(1-p) step^2 <= step^2 / 4.
TEST(CodecQsgd, UnbiasedAndWithinVarianceBound) {
  for (int bits : {2, 4, 8}) {
    QsgdCodec codec(bits, 64);
    const size_t n = 256;
    auto x = randomVector(n, 3);
    const int trials = 2000;
    std::vector<double> sum(n, 0.0), sumSq(n, 0.0);
    for (int t = 0; t < trials; ++t) {
      auto out = roundTrip(codec, x, {99, static_cast<uint64_t>(t), 0});
      for (size_t i = 0; i < n; ++i) {
        double e = out[i] - x[i];
        sum[i] += e;
        sumSq[i] += e * e;
      }
    }
    const double s = qsgdMaxLevel(bits);
    for (size_t b = 0; b < n; b += 64) {
      double m = 0;
      for (size_t i = b; i < b + 64; ++i) m = std::max(m, static_cast<double>(std::fabs(x[i])));
      const double step = m / s;
      for (size_t i = b; i < b + 64; ++i) {
        const double bound = step * step / 4;  // variance bound of one element
        const double mean = sum[i] / trials;
        const double var = sumSq[i] / trials - mean * mean;
        // 6 sigma of the mean under the bound, plus float rounding of the decoded values.
        ASSERT_LE(std::fabs(mean), 6 * std::sqrt(bound / trials) + 1e-6 * m) << "bits " << bits << " i " << i;
        ASSERT_LE(var, bound * 1.25 + 1e-12) << "bits " << bits << " i " << i;
      }
    }
  }
}

TEST(CodecQsgd, SameSeedAndStepGiveSameBytesOthersDiffer) {
  QsgdCodec codec(4);
  const size_t n = 4096;
  auto x = randomVector(n, 4);
  std::vector<uint8_t> a(codec.payloadBytes(n)), b(a.size()), c(a.size());
  codec.encode(x.data(), ternFloat32, n, a.data(), {1, 5, 0});
  codec.encode(x.data(), ternFloat32, n, b.data(), {1, 5, 0});
  codec.encode(x.data(), ternFloat32, n, c.data(), {1, 6, 0});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// Random draws are keyed by the global element index: encoding two halves with their offsets gives the same codes
// as encoding the whole (halves cut at a bucket boundary, so buckets are the same).
TEST(CodecQsgd, ChunkingDoesNotChangeDraws) {
  QsgdCodec codec(8, 64);
  const size_t n = 640, half = 320;
  auto x = randomVector(n, 5);
  std::vector<uint8_t> whole(codec.payloadBytes(n)), first(codec.payloadBytes(half)), second(first.size());
  codec.encode(x.data(), ternFloat32, n, whole.data(), {7, 8, 1000});
  codec.encode(x.data(), ternFloat32, half, first.data(), {7, 8, 1000});
  codec.encode(x.data() + half, ternFloat32, half, second.data(), {7, 8, 1000 + half});
  const size_t wholeCodes = qsgdCodesOffset(n, 64), halfCodes = qsgdCodesOffset(half, 64);
  EXPECT_TRUE(std::equal(first.begin() + halfCodes, first.end(), whole.begin() + wholeCodes));
  EXPECT_TRUE(std::equal(second.begin() + halfCodes, second.end(), whole.begin() + wholeCodes + half));
}

TEST(CodecQsgd, ZeroAndTinyBucketsDecodeToZero) {
  QsgdCodec codec(4, 32);
  std::vector<float> x(64, 0.0f);
  for (size_t i = 32; i < 64; ++i) x[i] = 1e-35f;  // below the tiny-scale cutoff
  auto out = roundTrip(codec, x, {});
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

// decoded + new residual == input + old residual: residual = v - decoded exactly as floats, the sum within one
// rounding.
TEST(CodecQsgd, ErrorFeedbackIdentity) {
  for (int bits : {2, 4, 8}) {
    QsgdCodec codec(bits, 512);
    const size_t n = 3000;
    auto x = randomVector(n, 6);
    auto r = randomVector(n, 7);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = x[i] + r[i];
    std::vector<uint8_t> payload(codec.payloadBytes(n));
    codec.encode(x.data(), ternFloat32, n, payload.data(), {3, 4, 0}, r.data());
    std::vector<float> d(n, 0.0f);
    codec.decode(payload.data(), payload.size(), n, d.data());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(r[i], v[i] - d[i]) << i;
      ASSERT_NEAR(d[i] + r[i], v[i], 1e-6f * (std::fabs(v[i]) + std::fabs(d[i])));
    }
  }
}

TEST(CodecQsgd, RejectsBadParameters) {
  EXPECT_THROW(QsgdCodec(3), Error);
  EXPECT_THROW(QsgdCodec(4, 100), Error);
  EXPECT_THROW(QsgdCodec(4, 0), Error);
}

}  // namespace
}  // namespace tern::compress
