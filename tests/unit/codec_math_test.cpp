// The shared arithmetic every codec implementation reproduces: the counter-based RNG (deterministic, keyed, uniform
// enough for stochastic rounding) and the fixed summation tree.
#include "compress/codec_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.hpp"
#include "compress/isa.hpp"
#include "compress/pairwise_sum.hpp"

namespace tern::compress {
namespace {

TEST(CodecMath, RngIsKeyedAndDeterministic) {
  RngKey a = makeRngKey(1, 2, kRngStreamQsgd), b = makeRngKey(1, 2, kRngStreamQsgd);
  RngKey c = makeRngKey(1, 3, kRngStreamQsgd), d = makeRngKey(1, 2, kRngStreamTopkSample);
  EXPECT_EQ(rngBits(a, 12345), rngBits(b, 12345));
  int sameC = 0, sameD = 0, sameHigh = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    sameC += rngBits(a, i) == rngBits(c, i);
    sameD += rngBits(a, i) == rngBits(d, i);
    sameHigh += rngBits(a, i) == rngBits(a, i + (uint64_t{1} << 32));
  }
  EXPECT_LT(sameC + sameD + sameHigh, 3);
}

TEST(CodecMath, RngUniformMoments) {
  RngKey key = makeRngKey(42, 0, kRngStreamQsgd);
  const int n = 1 << 20;
  double sum = 0, sumSq = 0;
  int buckets[16] = {};
  for (int i = 0; i < n; ++i) {
    float u = rngUniform(rngBits(key, static_cast<uint64_t>(i)));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sumSq += static_cast<double>(u) * u;
    ++buckets[static_cast<int>(u * 16)];
  }
  EXPECT_NEAR(sum / n, 0.5, 0.002);
  EXPECT_NEAR(sumSq / n - (sum / n) * (sum / n), 1.0 / 12, 0.002);
  for (int b : buckets) EXPECT_NEAR(b, n / 16, 5 * std::sqrt(n / 16.0));
  for (uint32_t m : {1u, 7u, 1000u, 0xffffffffu}) EXPECT_LT(rngBelow(0xffffffffu, m), m);
}

// The streaming stack gives the level-by-level pairwise tree for every count.
TEST(CodecMath, PairwiseSumMatchesLevelByLevelTree) {
  for (size_t m = 1; m <= 70; ++m) {
    std::vector<float> v(m);
    for (size_t i = 0; i < m; ++i) v[i] = 1.0f + static_cast<float>(i) * 1e-3f + (i % 3 == 0 ? 1e-7f : 0.0f);
    PairwiseSum s;
    for (float x : v) s.add(x);
    std::vector<float> level = v;
    while (level.size() > 1) {
      std::vector<float> next;
      for (size_t i = 0; i < level.size(); i += 2)
        next.push_back(i + 1 < level.size() ? level[i] + level[i + 1] : level[i]);
      level = next;
    }
    ASSERT_EQ(s.total(), level[0]) << m;
  }
}

TEST(CodecMath, IsaHookForcesAndRestores) {
  CodecIsa before = activeCodecIsa();
  {
    ScopedCodecIsa scalar(CodecIsa::kScalar);
    EXPECT_EQ(activeCodecIsa(), CodecIsa::kScalar);
  }
  EXPECT_EQ(activeCodecIsa(), before);
  if (!codecIsaSupported(CodecIsa::kAvx512)) {
    EXPECT_THROW(setCodecIsa(CodecIsa::kAvx512), Error);
  }
  EXPECT_STREQ(codecIsaName(bestCodecIsa()), codecIsaName(before));
}

}  // namespace
}  // namespace tern::compress
