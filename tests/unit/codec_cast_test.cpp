// fp16/bf16 codecs and the rounding helpers behind them: round to nearest even on every half-way case, subnormals,
// overflow, NaN; decode accumulates; error feedback keeps the exact rounding error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "compress/cast_codec.hpp"
#include "compress/codec_math.hpp"

namespace tern::compress {
namespace {

TEST(CodecCast, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfBitsToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(f))));
      continue;
    }
    ASSERT_EQ(floatToHalfBits(f), h) << std::hex << h;
  }
}

// Midpoints between neighbouring halves go to the even one; anything off the midpoint to the nearer one.
TEST(CodecCast, HalfRoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x7bff; ++h) {  // positive finite pairs (h, h+1)
    double lo = halfBitsToFloat(static_cast<uint16_t>(h)), hi = halfBitsToFloat(static_cast<uint16_t>(h + 1));
    float mid = static_cast<float>((lo + hi) / 2);  // exact in float
    uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    ASSERT_EQ(floatToHalfBits(mid), even) << std::hex << h;
    ASSERT_EQ(floatToHalfBits(std::nextafter(mid, 0.0f)), h);
    ASSERT_EQ(floatToHalfBits(std::nextafter(mid, INFINITY)), h + 1);
    ASSERT_EQ(floatToHalfBits(-mid), 0x8000 | even);
  }
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00) << "the midpoint to 65536 rounds up to inf";
  EXPECT_EQ(floatToHalfBits(1e30f), 0x7c00);
  EXPECT_EQ(floatToHalfBits(-INFINITY), 0xfc00);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000) << "half of the smallest subnormal ties to 0";
  EXPECT_EQ(floatToHalfBits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalfBits(-1e-30f), 0x8000);
  EXPECT_EQ(floatToHalfBits(bitsFloat(0x7fc00000u)), 0x7e00);
  EXPECT_EQ(floatToHalfBits(bitsFloat(0x7f800001u)) & 0x7e00, 0x7e00) << "NaN stays NaN (quiet)";
}

TEST(CodecCast, Bf16RoundsToNearestEven) {
  std::mt19937 rng(1);
  for (int t = 0; t < 200000; ++t) {
    uint32_t b = rng() & 0xffffu;
    if ((b & 0x7f80u) == 0x7f80u) continue;  // inf/NaN
    float v = bf16BitsToFloat(static_cast<uint16_t>(b));
    ASSERT_EQ(floatToBf16Bits(v), b);
    if ((b & 0x7fffu) == 0x7f7fu) continue;  // next is inf
    uint32_t x = static_cast<uint32_t>(b) << 16;
    float mid = bitsFloat(x | 0x8000u);
    ASSERT_EQ(floatToBf16Bits(mid), (b & 1) ? b + 1 : b);
    ASSERT_EQ(floatToBf16Bits(bitsFloat(x | 0x7fffu)), b);
    ASSERT_EQ(floatToBf16Bits(bitsFloat(x | 0x8001u)), b + 1);
  }
  EXPECT_EQ(floatToBf16Bits(bitsFloat(0x7f7fffffu)), 0x7f80) << "max float rounds to inf";
  EXPECT_EQ(floatToBf16Bits(bitsFloat(0x00000001u)), 0x0000) << "subnormals round, not flush";
  EXPECT_EQ(floatToBf16Bits(bitsFloat(0x00018000u)), 0x0002);
  EXPECT_EQ(floatToBf16Bits(bitsFloat(0xff800001u)), 0xffc0) << "NaN stays NaN (quiet)";
}

TEST(CodecCast, EncodeDecodeAccumulate) {
  for (CodecKind kind : {CodecKind::kFp16, CodecKind::kBf16}) {
    CastCodec codec(kind);
    const size_t n = 1001;
    std::mt19937 rng(2);
    std::normal_distribution<float> normal(0.0f, 10.0f);
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    EXPECT_EQ(codec.payloadBytes(n), 2 * n);
    std::vector<uint8_t> payload(2 * n);
    EXPECT_EQ(codec.encode(x.data(), ternFloat32, n, payload.data()), 2 * n);
    std::vector<float> out(n, 1.0f);
    codec.decode(payload.data(), payload.size(), n, out.data());
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, payload.data() + 2 * i, 2);
      uint16_t expected = kind == CodecKind::kFp16 ? floatToHalfBits(x[i]) : floatToBf16Bits(x[i]);
      ASSERT_EQ(h, expected);
      float widened = kind == CodecKind::kFp16 ? halfBitsToFloat(h) : bf16BitsToFloat(h);
      ASSERT_EQ(out[i], 1.0f + widened);
    }
  }
}

// The rounding error of a round-to-nearest cast is exactly representable, so the identity is bitwise.
TEST(CodecCast, ErrorFeedbackIdentityIsExact) {
  for (CodecKind kind : {CodecKind::kFp16, CodecKind::kBf16}) {
    CastCodec codec(kind);
    const size_t n = 3000;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n), r(n), v(n);
    for (size_t i = 0; i < n; ++i) {
      x[i] = normal(rng);
      r[i] = normal(rng) * 1e-3f;
      v[i] = x[i] + r[i];
    }
    std::vector<uint8_t> payload(2 * n);
    codec.encode(x.data(), ternFloat32, n, payload.data(), {}, r.data());
    std::vector<float> d(n, 0.0f);
    codec.decode(payload.data(), payload.size(), n, d.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(d[i] + r[i], v[i]) << i;
  }
}

}  // namespace
}  // namespace tern::compress
