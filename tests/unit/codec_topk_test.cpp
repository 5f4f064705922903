// Top-K: exact selection keeps exactly the k largest |x| (ties to the lower index), sampled selection keeps about k
// and always the largest of the chunk, payloads are sorted and validated, and error feedback keeps exactly what was
// not sent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "base/error.hpp"
#include "compress/codec_factory.hpp"
#include "compress/codec_math.hpp"
#include "compress/payload_layout.hpp"
#include "compress/topk_codec.hpp"

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

// Normal values rounded to multiples of 1/8: hundreds of elements share each magnitude near the top 1%, so the
// sampled threshold lands on a run of ties and more than k elements reach it.
std::vector<float> tiedVector(size_t n, uint32_t seed) {
  auto x = randomVector(n, seed);
  for (float& v : x) v = std::round(v * 8.0f) / 8.0f;
  return x;
}

// Sampled selection: about k kept, and what it keeps are the largest |x| (ties to the lower index), whether fewer
// than k reach the sampled threshold (all of them sent) or more (the k largest of them, never the first k in index
// order, which passed over the end of the chunk call after call).
TEST(CodecTopK, SampledKeepsTheLargestAndAboutK) {
  const size_t n = 1 << 19;
  TopKCodec codec(0.01);
  const size_t k = codec.topkCount(n);
  ASSERT_TRUE(topkPlan(codec.params(), n).sampled);
  for (bool ties : {false, true}) {
    auto x = ties ? tiedVector(n, 11) : randomVector(n, 11);
    size_t full = 0;  // calls where at least k reached the threshold
    for (uint64_t step = 0; step < 12; ++step) {
      Sparse s = encode(codec, x, nullptr, {5, step, 0});
      EXPECT_GE(s.indices.size(), k * 8 / 10);
      ASSERT_LE(s.indices.size(), k);
      ASSERT_EQ(s.indices, referenceTopK(x, s.indices.size())) << "ties " << ties << " step " << step;
      for (size_t j = 0; j < s.indices.size(); ++j) ASSERT_EQ(s.values[j], x[s.indices[j]]);
      EXPECT_EQ(s.bytes, 8 + s.indices.size() * 8);
      full += s.indices.size() == k;
    }
    // The cases of the rule occur (the seeds are fixed, so this is deterministic): more than k reach the threshold
    // (always, on a run of ties), and, without ties, also fewer.
    EXPECT_GT(full, 0u) << "ties " << ties;
    if (!ties) {
      EXPECT_LT(full, 12u);
    }
  }
}

// A sampled threshold on a run of equal keys far longer than k (here every element): the k lowest indices, as the
// exact selection keeps, and the error-feedback identity holds.
TEST(CodecTopK, SampledOnAllEqualKeysKeepsTheFirstK) {
  const size_t n = 1 << 18;
  for (const char* spec : {"topk:0.01", "topk:0.01:fp16"}) {
    auto codec = makeCodec(spec);
    const size_t k = codec->topkCount(n);
    ASSERT_TRUE(topkPlan(codec->params(), n).sampled);
    std::vector<float> x(n, 0.75f);
    for (size_t i = 0; i < n; i += 3) x[i] = -0.75f;
    std::vector<uint32_t> firstK(k);
    std::iota(firstK.begin(), firstK.end(), 0u);
    EXPECT_EQ(encode(*codec, x, nullptr, {5, 1, 0}).indices, firstK) << spec;
    std::vector<float> r(n, 0.25f);  // v = x + r = +-1
    for (size_t i = 0; i < n; i += 3) r[i] = -0.25f;
    Sparse s = encode(*codec, x, r.data(), {5, 2, 0});
    EXPECT_EQ(s.indices, firstK) << spec;
    std::vector<float> d(n, 0.0f);
    for (size_t j = 0; j < s.indices.size(); ++j) d[s.indices[j]] = s.values[j];
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(d[i] + r[i], i % 3 == 0 ? -1.0f : 1.0f) << spec << " " << i;
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
    // The selection ran on v = x + residual: the exact one keeps k, the sampled one about k, both the largest.
    std::vector<uint32_t> kept;
    for (size_t i = 0; i < n; ++i) {
      if (d[i] != 0.0f) kept.push_back(static_cast<uint32_t>(i));
    }
    const bool exact = std::string(spec).find("exact") != std::string::npos;
    ASSERT_FALSE(kept.empty());
    EXPECT_EQ(kept, referenceTopK(v, exact ? codec->topkCount(n) : kept.size())) << spec;
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
