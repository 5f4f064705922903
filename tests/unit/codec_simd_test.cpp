// Every codec's AVX2 and AVX-512 kernels must produce the scalar reference's bits: payload, decoded values and
// error-feedback residual, for every input dtype and for sizes that exercise every tail path.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compress/codec_factory.hpp"
#include "compress/codec_math.hpp"
#include "compress/isa.hpp"

namespace tern::compress {
namespace {

struct CodecRun {
  std::vector<uint8_t> payload;
  std::vector<float> residual;
  std::vector<float> decodedAdd;
  std::vector<float> decodedSet;
};

// Input of n elements of dtype with a mix of magnitudes, exact zeros, negative zeros and repeated values (ties).
std::vector<uint8_t> makeInput(size_t n, ternDataType_t dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint8_t> bytes(n * (dtype == ternFloat32 ? 4 : 2));
  for (size_t i = 0; i < n; ++i) {
    float v = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 16) - 8);
    if (rng() % 17 == 0) v = 0.0f;
    if (rng() % 19 == 0) v = -0.0f;
    if (rng() % 23 == 0) v = 0.5f;
    if (dtype == ternFloat32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      uint16_t h = dtype == ternFloat16 ? floatToHalfBits(v) : floatToBf16Bits(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

CodecRun runCodec(const Codec& codec, const std::vector<uint8_t>& input, ternDataType_t dtype, size_t n, bool ef,
                  CodecIsa isa) {
  ScopedCodecIsa scoped(isa);
  CodecRun r;
  r.payload.assign(codec.payloadBytes(n), 0xcd);  // poison: unwritten bytes would differ between runs
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> small(-0.01f, 0.01f);
  if (ef) {
    r.residual.resize(n);
    for (float& x : r.residual) x = small(rng);
  }
  EncodeContext ctx{12345, 17, 1000};
  size_t bytes = codec.encode(input.data(), dtype, n, r.payload.data(), ctx, ef ? r.residual.data() : nullptr);
  r.payload.resize(bytes);
  r.decodedAdd.assign(n, 0.25f);
  codec.decode(r.payload.data(), bytes, n, r.decodedAdd.data(), true);
  r.decodedSet.assign(n, 99.0f);
  codec.decode(r.payload.data(), bytes, n, r.decodedSet.data(), false);
  return r;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

class CodecSimdTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CodecSimdTest, SimdMatchesScalarBitForBit) {
  auto codec = makeCodec(GetParam());
  const size_t sizes[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 100, 513, 1023, 1024, 1025, 2048 + 40, 5000, 70001};
  const ternDataType_t dtypes[] = {ternFloat32, ternFloat16, ternBfloat16};
  for (CodecIsa isa : {CodecIsa::kAvx2, CodecIsa::kAvx512}) {
    if (!codecIsaSupported(isa)) {
      std::printf("note: %s not supported on this CPU, not compared\n", codecIsaName(isa));
      continue;
    }
    for (ternDataType_t dtype : dtypes) {
      for (size_t n : sizes) {
        auto input = makeInput(n, dtype, static_cast<uint32_t>(n * 31 + dtype));
        for (bool ef : {false, true}) {
          CodecRun ref = runCodec(*codec, input, dtype, n, ef, CodecIsa::kScalar);
          CodecRun got = runCodec(*codec, input, dtype, n, ef, isa);
          SCOPED_TRACE(std::string(codecIsaName(isa)) + " dtype " + std::to_string(dtype) + " n " + std::to_string(n) +
                       (ef ? " ef" : ""));
          ASSERT_EQ(ref.payload, got.payload);
          ASSERT_TRUE(sameBits(ref.residual, got.residual));
          ASSERT_TRUE(sameBits(ref.decodedAdd, got.decodedAdd));
          ASSERT_TRUE(sameBits(ref.decodedSet, got.decodedSet));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecSimdTest,
                         ::testing::Values("sign", "sign:rms", "qsgd:2", "qsgd:4", "qsgd:8", "qsgd:4:32", "qsgd:8:96",
                                           "topk:0.01", "topk:0.05:exact", "topk:0.3:exact:fp16", "topk:0.01:fp16",
                                           "fp16", "bf16"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) {
                             if (c == ':' || c == '.') c = '_';
                           }
                           return s;
                         });

// Special values (inf, NaN, huge, denormal) must also give identical bits on every path for the codecs whose
// results are defined elementwise.
TEST(CodecSimd, SpecialValuesMatchScalar) {
  std::vector<float> x = {0.0f,           -0.0f,        1e-45f, -1e-40f, 65504.0f, 65520.0f, -65519.0f, 1e30f,
                          -1e30f,         3e38f,        6e-8f,  -3e-8f,  2.98e-8f, 1.0f,     -1.0f,     0.333f,
                          1.00048828125f, 1.001953125f, -2.5f,  7.0e-5f, 5.96e-8f, 1e-7f};
  const uint32_t nanBits[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fbfffffu};
  for (uint32_t b : nanBits) x.push_back(bitsFloat(b));
  x.push_back(bitsFloat(0x7f800000u));
  x.push_back(bitsFloat(0xff800000u));
  while (x.size() % 16 != 5) x.push_back(static_cast<float>(x.size()) * 0.37f);
  std::vector<uint8_t> input(x.size() * 4);
  std::memcpy(input.data(), x.data(), input.size());
  for (const char* spec : {"fp16", "bf16", "topk:0.5:exact", "topk:0.5:exact:fp16"}) {
    auto codec = makeCodec(spec);
    for (CodecIsa isa : {CodecIsa::kAvx2, CodecIsa::kAvx512}) {
      if (!codecIsaSupported(isa)) continue;
      SCOPED_TRACE(std::string(spec) + " " + codecIsaName(isa));
      CodecRun ref = runCodec(*codec, input, ternFloat32, x.size(), true, CodecIsa::kScalar);
      CodecRun got = runCodec(*codec, input, ternFloat32, x.size(), true, isa);
      EXPECT_EQ(ref.payload, got.payload);
      EXPECT_TRUE(sameBits(ref.residual, got.residual));
      EXPECT_TRUE(sameBits(ref.decodedSet, got.decodedSet));
    }
  }
}

}  // namespace
}  // namespace tern::compress
