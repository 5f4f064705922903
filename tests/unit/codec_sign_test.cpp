// Sign codec: payload layout and size, decoded signs and scales (mean |x| and RMS), zero counted as positive,
// fp16/bf16 inputs, and the error-feedback identity.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.hpp"
#include "compress/codec_factory.hpp"
#include "compress/codec_math.hpp"
#include "compress/pairwise_sum.hpp"
#include "compress/sign_codec.hpp"

namespace tern::compress {
namespace {

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

float payloadScale(const std::vector<uint8_t>& payload) {
  float s;
  std::memcpy(&s, payload.data(), 4);
  return s;
}

TEST(CodecSign, PayloadSizeIsExact) {
  SignCodec codec;
  for (size_t n : {0, 1, 7, 8, 9, 1000, 1024, 1025}) {
    EXPECT_EQ(codec.payloadBytes(n), 4 + (n + 7) / 8);
    auto x = randomVector(n, 1);
    std::vector<uint8_t> payload(codec.payloadBytes(n) + 16, 0xab);
    EXPECT_EQ(codec.encode(x.data(), ternFloat32, n, payload.data()), codec.payloadBytes(n));
    for (size_t i = codec.payloadBytes(n); i < payload.size(); ++i) ASSERT_EQ(payload[i], 0xab) << "wrote past end";
  }
}

TEST(CodecSign, DecodeHasRightSignsAndMeanScale) {
  const size_t n = 3001;
  auto x = randomVector(n, 2);
  x[5] = 0.0f;
  x[6] = -0.0f;
  SignCodec codec;
  std::vector<uint8_t> payload(codec.payloadBytes(n));
  codec.encode(x.data(), ternFloat32, n, payload.data());
  double meanAbs = 0;
  for (float v : x) meanAbs += std::fabs(v);
  meanAbs /= n;
  const float scale = payloadScale(payload);
  EXPECT_NEAR(scale, meanAbs, 1e-5 * meanAbs);
  std::vector<float> out(n, 1.0f);
  codec.decode(payload.data(), payload.size(), n, out.data());  // accumulates
  for (size_t i = 0; i < n; ++i) {
    float expected = 1.0f + (x[i] >= 0.0f ? scale : -scale);
    ASSERT_EQ(out[i], expected) << i;
  }
  EXPECT_EQ(out[5], 1.0f + scale) << "zero encodes as +";
  EXPECT_EQ(out[6], 1.0f + scale) << "negative zero encodes as +";
  codec.decode(payload.data(), payload.size(), n, out.data(), /*accumulate=*/false);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] >= 0.0f ? scale : -scale);
}

TEST(CodecSign, RmsScaleIsNormOverSqrtN) {
  const size_t n = 4097;
  auto x = randomVector(n, 3);
  SignCodec codec(SignScale::kRms);
  std::vector<uint8_t> payload(codec.payloadBytes(n));
  codec.encode(x.data(), ternFloat32, n, payload.data());
  double sq = 0;
  for (float v : x) sq += static_cast<double>(v) * v;
  EXPECT_NEAR(payloadScale(payload), std::sqrt(sq) / std::sqrt(static_cast<double>(n)), 1e-5);
}

// The scale follows the documented summation tree exactly (what the GPU reproduces).
TEST(CodecSign, ScaleFollowsDocumentedSumOrder) {
  const size_t n = 5 * kSumBlock + 77;
  auto x = randomVector(n, 4);
  // Reference: blocks of 1024, 32 strided lanes, lane fold, then level-by-level pairwise over blocks.
  std::vector<float> blocks;
  for (size_t b = 0; b < n; b += kSumBlock) {
    float lane[kSumLanes] = {};
    for (size_t i = b; i < std::min(n, b + kSumBlock); ++i) lane[(i - b) % kSumLanes] += std::fabs(x[i]);
    blocks.push_back(foldLanes(lane));
  }
  while (blocks.size() > 1) {
    std::vector<float> next;
    for (size_t i = 0; i < blocks.size(); i += 2)
      next.push_back(i + 1 < blocks.size() ? blocks[i] + blocks[i + 1] : blocks[i]);
    blocks = next;
  }
  float expected = blocks[0] / static_cast<float>(n);
  SignCodec codec;
  std::vector<uint8_t> payload(codec.payloadBytes(n));
  codec.encode(x.data(), ternFloat32, n, payload.data());
  EXPECT_EQ(payloadScale(payload), expected);
}

TEST(CodecSign, HalfInputsEncodeLikeTheirFp32Values) {
  const size_t n = 2500;
  auto x = randomVector(n, 5);
  std::vector<uint16_t> h(n), b(n);
  std::vector<float> xh(n), xb(n);
  for (size_t i = 0; i < n; ++i) {
    h[i] = floatToHalfBits(x[i]);
    b[i] = floatToBf16Bits(x[i]);
    xh[i] = halfBitsToFloat(h[i]);
    xb[i] = bf16BitsToFloat(b[i]);
  }
  SignCodec codec;
  std::vector<uint8_t> p1(codec.payloadBytes(n)), p2(p1.size());
  codec.encode(h.data(), ternFloat16, n, p1.data());
  codec.encode(xh.data(), ternFloat32, n, p2.data());
  EXPECT_EQ(p1, p2);
  codec.encode(b.data(), ternBfloat16, n, p1.data());
  codec.encode(xb.data(), ternFloat32, n, p2.data());
  EXPECT_EQ(p1, p2);
}

// With inputs on a coarse binary grid and n a power of two every operation is exact, so the identity
// decoded + new residual == input + old residual holds bit for bit.
TEST(CodecSign, ErrorFeedbackIdentityIsExact) {
  for (const char* spec : {"sign", "sign:rms"}) {
    auto codec = makeCodec(spec);
    const size_t n = 4096;
    std::mt19937 rng(6);
    std::vector<float> x(n), r(n);
    for (size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(static_cast<int>(rng() % 129) - 64) / 16.0f;
      r[i] = static_cast<float>(static_cast<int>(rng() % 17) - 8) / 16.0f;
    }
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = x[i] + r[i];
    std::vector<uint8_t> payload(codec->payloadBytes(n));
    codec->encode(x.data(), ternFloat32, n, payload.data(), {}, r.data());
    std::vector<float> d(n, 0.0f);
    codec->decode(payload.data(), payload.size(), n, d.data());
    const float scale = payloadScale(payload);
    bool exactScale = std::string(spec) == "sign";  // sqrt is not exact in general
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(r[i], v[i] - d[i]) << spec << " " << i;  // the defining relation, always bitwise
      if (exactScale) {
        ASSERT_EQ(d[i] + r[i], v[i]) << i;
      }
      ASSERT_EQ(d[i], v[i] >= 0.0f ? scale : -scale);
    }
  }
}

// General inputs: the residual is the float difference v - decoded, bit for bit.
TEST(CodecSign, ErrorFeedbackResidualIsDifference) {
  const size_t n = 10000;
  auto x = randomVector(n, 7);
  auto r = randomVector(n, 8);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = x[i] + r[i];
  SignCodec codec;
  std::vector<uint8_t> payload(codec.payloadBytes(n));
  codec.encode(x.data(), ternFloat32, n, payload.data(), {}, r.data());
  std::vector<float> d(n, 0.0f);
  codec.decode(payload.data(), payload.size(), n, d.data());
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(r[i], v[i] - d[i]);
    ASSERT_NEAR(d[i] + r[i], v[i], 1e-6f * (std::fabs(v[i]) + std::fabs(d[i])));
  }
}

TEST(CodecSign, RejectsWrongPayloadSizeAndDtype) {
  SignCodec codec;
  std::vector<float> x(100, 1.0f), out(100);
  std::vector<uint8_t> payload(codec.payloadBytes(100));
  EXPECT_THROW(codec.encode(x.data(), ternInt32, 100, payload.data()), Error);
  EXPECT_THROW(codec.decode(payload.data(), payload.size() - 1, 100, out.data()), Error);
  EXPECT_THROW(codec.encode(nullptr, ternFloat32, 0, nullptr), Error) << "an empty chunk still has a scale";
  EXPECT_EQ(codec.encode(nullptr, ternFloat32, 0, payload.data()), 4u);
  try {
    codec.encode(x.data(), ternFloat64, 100, payload.data());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("double"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tern::compress
