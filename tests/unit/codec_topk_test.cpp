// Top-K: exact selection keeps exactly the k largest |x| (ties to the lower index), sampled selection keeps about k
// and only elements above every dropped earlier element, payloads are sorted and validated, and error feedback
// keeps exactly what was not sent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "compress/codec_factory.hpp"
#include "compress/codec_math.hpp"
#include "compress/payload_layout.hpp"
#include "compress/topk_codec.hpp"
#include "core/error.hpp"

namespace tern::compress {
namespace {

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

struct Sparse {
  std::vector<uint32_t> indices;
  std::vector<float> values;
  size_t bytes = 0;
};

Sparse encode(const Codec& codec, const std::vector<float>& x, float* residual = nullptr, EncodeContext ctx = {}) {
  std::vector<uint8_t> payload(codec.payloadBytes(x.size()));
  Sparse s;
  s.bytes = codec.encode(x.data(), ternFloat32, x.size(), payload.data(), ctx, residual);
  uint32_t header[2];
  std::memcpy(header, payload.data(), 8);
  EXPECT_EQ(header[1], x.size());
  s.indices.resize(header[0]);
  std::memcpy(s.indices.data(), payload.data() + 8, 4 * header[0]);
  // Decode gives the values (also checks the decode path).
  std::vector<float> out(x.size(), 0.0f);
  codec.decode(payload.data(), s.bytes, x.size(), out.data(), false);
  for (uint32_t i : s.indices) s.values.push_back(out[i]);
  return s;
}

// Reference: indices of the k largest |x|, ties by lower index.
std::vector<uint32_t> referenceTopK(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k - 1), idx.end(),
                   [&](uint32_t a, uint32_t b) {
                     float fa = std::fabs(x[a]), fb = std::fabs(x[b]);
                     return fa != fb ? fa > fb : a < b;
                   });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

TEST(CodecTopK, ExactKeepsExactlyTheKLargest) {
  for (size_t n : {1, 10, 100, 1000, 100000}) {
    for (double ratio : {0.001, 0.01, 0.3, 1.0}) {
      TopKCodec codec(ratio, TopKSelect::kExact);
      auto x = randomVector(n, static_cast<uint32_t>(n));
      size_t k = codec.topkCount(n);
      Sparse s = encode(codec, x);
      ASSERT_EQ(s.indices, referenceTopK(x, k)) << "n " << n << " ratio " << ratio;
      for (size_t j = 0; j < s.indices.size(); ++j) ASSERT_EQ(s.values[j], x[s.indices[j]]);
      EXPECT_EQ(s.bytes, codec.payloadBytes(n));
    }
  }
}

TEST(CodecTopK, ExactBreaksTiesByLowerIndex) {
  std::vector<float> x(1000, 0.5f);
  for (size_t i = 0; i < 1000; i += 7) x[i] = -0.5f;  // same magnitude
  x[500] = 2.0f;
  x[900] = -3.0f;
  TopKCodec codec(0.01, TopKSelect::kExact);  // k = 10
  Sparse s = encode(codec, x);
  std::vector<uint32_t> expected = {0, 1, 2, 3, 4, 5, 6, 7, 500, 900};
  EXPECT_EQ(s.indices, expected);
}

// Sampled selection: about k kept; kept elements exceed every element dropped before the last kept index (the
// selection is "|x| >= T in index order, at most k").
TEST(CodecTopK, SampledKeepsAboutKAboveThreshold) {
  const size_t n = 1 << 19;
  auto x = randomVector(n, 11);
  TopKCodec codec(0.01);
  const size_t k = codec.topkCount(n);
  ASSERT_TRUE(topkPlan(codec.params(), n).sampled);
  for (uint64_t step = 0; step < 4; ++step) {
    Sparse s = encode(codec, x, nullptr, {5, step, 0});
    EXPECT_GE(s.indices.size(), k * 8 / 10);
    EXPECT_LE(s.indices.size(), k);
    ASSERT_TRUE(std::is_sorted(s.indices.begin(), s.indices.end()));
    float minKept = INFINITY;
    for (float v : s.values) minKept = std::min(minKept, std::fabs(v));
    std::vector<char> kept(n, 0);
    for (uint32_t i : s.indices) kept[i] = 1;
    const uint32_t last = s.indices.back();
    const bool capped = s.indices.size() == k;
    for (uint32_t i = 0; i < n; ++i) {
      if (kept[i] || (capped && i > last)) continue;
      ASSERT_LT(std::fabs(x[i]), minKept) << i;
    }
    EXPECT_EQ(s.bytes, 8 + s.indices.size() * 8);
  }
}

TEST(CodecTopK, Fp16ValuesAreRoundedAndResidualKeepsTheRest) {
  const size_t n = 5000;
  auto x = randomVector(n, 12);
  std::vector<float> r(n, 0.0f);
  TopKCodec codec(0.05, TopKSelect::kExact, /*fp16Values=*/true);
  Sparse s = encode(codec, x, r.data());
  EXPECT_EQ(s.bytes, 8 + s.indices.size() * 6);
  std::vector<float> d(n, 0.0f);
  for (size_t j = 0; j < s.indices.size(); ++j) {
    uint32_t i = s.indices[j];
    EXPECT_EQ(s.values[j], halfBitsToFloat(floatToHalfBits(x[i])));
    d[i] = s.values[j];
  }
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(r[i], x[i] - d[i]) << i;
}

// Error feedback: decoded + new residual == input + old residual, bit for bit (kept: residual 0; others: v).
TEST(CodecTopK, ErrorFeedbackIdentityIsExact) {
  for (const char* spec : {"topk:0.01", "topk:0.02:exact"}) {
    auto codec = makeCodec(spec);
    const size_t n = 200000;
    auto x = randomVector(n, 13);
    auto r = randomVector(n, 14);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = x[i] + r[i];
    std::vector<uint8_t> payload(codec->payloadBytes(n));
    size_t bytes = codec->encode(x.data(), ternFloat32, n, payload.data(), {1, 2, 3}, r.data());
    std::vector<float> d(n, 0.0f);
    codec->decode(payload.data(), bytes, n, d.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(d[i] + r[i], v[i]) << spec << " " << i;
    if (std::string(spec).find("exact") != std::string::npos) {
      // The exact selection ran on v = x + residual.
      std::vector<uint32_t> kept;
      for (size_t i = 0; i < n; ++i) {
        if (d[i] != 0.0f) kept.push_back(static_cast<uint32_t>(i));
      }
      EXPECT_EQ(kept, referenceTopK(v, codec->topkCount(n)));
    }
  }
}

TEST(CodecTopK, DecodeScatterAddsIntoOutput) {
  const size_t n = 1000;
  auto x = randomVector(n, 15);
  TopKCodec codec(0.1, TopKSelect::kExact);
  std::vector<uint8_t> payload(codec.payloadBytes(n));
  size_t bytes = codec.encode(x.data(), ternFloat32, n, payload.data());
  std::vector<float> out(n, 1.0f);
  codec.decode(payload.data(), bytes, n, out.data());
  auto idx = referenceTopK(x, codec.topkCount(n));
  std::set<uint32_t> kept(idx.begin(), idx.end());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], kept.count(static_cast<uint32_t>(i)) ? 1.0f + x[i] : 1.0f);
}

TEST(CodecTopK, RejectsMalformedPayloads) {
  const size_t n = 100;
  auto x = randomVector(n, 16);
  TopKCodec codec(0.05, TopKSelect::kExact);
  std::vector<uint8_t> payload(codec.payloadBytes(n));
  size_t bytes = codec.encode(x.data(), ternFloat32, n, payload.data());
  std::vector<float> out(n, 0.0f);
  EXPECT_THROW(codec.decode(payload.data(), 4, n, out.data()), Error);
  EXPECT_THROW(codec.decode(payload.data(), bytes - 1, n, out.data()), Error);
  EXPECT_THROW(codec.decode(payload.data(), bytes, n + 1, out.data()), Error);
  auto bad = payload;
  uint32_t big = 1000;
  std::memcpy(bad.data() + 8 + 4, &big, 4);  // index out of range
  EXPECT_THROW(codec.decode(bad.data(), bytes, n, out.data()), Error);
  bad = payload;
  std::memcpy(bad.data() + 8 + 4, bad.data() + 8, 4);  // repeated index
  EXPECT_THROW(codec.decode(bad.data(), bytes, n, out.data()), Error);
  for (float v : out) EXPECT_EQ(v, 0.0f) << "a rejected payload must not touch the output";
}

TEST(CodecTopK, PayloadBoundAndPlan) {
  TopKCodec codec(0.01);
  EXPECT_EQ(codec.topkCount(0), 0u);
  EXPECT_EQ(codec.topkCount(10), 1u);
  EXPECT_EQ(codec.topkCount(1000), 10u);
  EXPECT_EQ(codec.payloadBytes(1000), 8u + 10 * 8);
  EXPECT_FALSE(topkPlan(codec.params(), 10000).sampled) << "small chunks select exactly";
  TopkPlan plan = topkPlan(codec.params(), 1 << 24);
  EXPECT_TRUE(plan.sampled);
  EXPECT_NEAR(static_cast<double>(plan.sampleSize), 25600.0, 2.0);  // 256 n / k
  EXPECT_EQ(plan.sampleRank, 256u);
  EXPECT_THROW(TopKCodec(0.0), Error);
  EXPECT_THROW(TopKCodec(1.5), Error);
}

}  // namespace
}  // namespace tern::compress
