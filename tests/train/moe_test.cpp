// MoE dispatch/combine: identity experts give the input back exactly; per-expert linear maps match a
// single-process reference, forward and backward, including capacity drops. The reference is scalar code here,
// evaluated in double from this rank's own tokens and routing: it never calls the library's MoE pieces.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <random>

#include "rank_threads.hpp"
#include "tern/train.h"

namespace tern::train::testing {
namespace {

constexpr size_t kHidden = 8;

struct Batch {
  std::vector<float> tokens, gates;
  std::vector<int> ids;
};

// Rank r's tokens and routing; top-2 picks two distinct experts.
Batch makeBatch(int rank, size_t tokens, int topK, int experts, bool halfGates) {
  std::mt19937 rng(100 + rank);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(0, experts - 1);
  std::uniform_real_distribution<float> u(0.05f, 1.0f);
  Batch b;
  b.tokens.resize(tokens * kHidden);
  for (auto& v : b.tokens) v = n(rng);
  for (size_t t = 0; t < tokens; ++t) {
    int first = e(rng), second = e(rng);
    while (topK == 2 && second == first) second = e(rng);
    b.ids.push_back(first);
    if (topK == 2) b.ids.push_back(second);
    for (int k = 0; k < topK; ++k) b.gates.push_back(halfGates ? 1.0f / topK : u(rng));
  }
  return b;
}

// Expert e as a linear map: out = W_e x, W_e[i][j] a function of (e, i, j).
float expertWeight(int e, size_t i, size_t j) { return std::sin(0.7f * e + 0.3f * i - 0.11f * j); }

void applyExpert(int e, const float* x, float* y, size_t rows, bool transpose) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < kHidden; ++i) {
      float acc = 0;
      for (size_t j = 0; j < kHidden; ++j) {
        acc += (transpose ? expertWeight(e, j, i) : expertWeight(e, i, j)) * x[r * kHidden + j];
      }
      y[r * kHidden + i] = acc;
    }
  }
}

// The capacity rule, restated: per expert, ceil(cf * T * k / E) assignments, first choices before second ones.
std::vector<bool> keptMask(const Batch& b, size_t tokens, int topK, int experts, float cf) {
  size_t cap = cf > 0 ? static_cast<size_t>(std::ceil(double(cf) * tokens * topK / experts)) : SIZE_MAX;
  std::vector<size_t> used(experts, 0);
  std::vector<bool> kept(tokens * topK, false);
  for (int k = 0; k < topK; ++k) {
    for (size_t t = 0; t < tokens; ++t) {
      int e = b.ids[t * topK + k];
      if (used[e] < cap) {
        kept[t * topK + k] = true;
        ++used[e];
      }
    }
  }
  return kept;
}

ternMoeConfig_t moeConfig(int experts, int topK, float cf) {
  ternMoeConfig_t c;
  ternMoeConfigDefault(&c);
  c.numExperts = experts;
  c.topK = topK;
  c.capacityFactor = cf;
  c.hidden = kHidden;
  return c;
}

struct MoeCase {
  int ranks;
  int topK;
};

void PrintTo(const MoeCase& c, std::ostream* os) { *os << c.ranks << " ranks, top-" << c.topK; }

class MoeRanks : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeRanks, IdentityExpertsReturnTheInputExactly) {
  const MoeCase c = GetParam();
  const int experts = 2 * c.ranks;
  runRanks(c.ranks, [&](ternComm_t comm, int rank) {
    const size_t tokens = 40 + 7 * rank;  // ranks need not have the same token count
    Batch b = makeBatch(rank, tokens, c.topK, experts, true);
    Moe moe(comm, moeConfig(experts, c.topK, 0.0f));  // unlimited capacity: nothing dropped
    moe.dispatch(b.tokens.data(), tokens, b.ids.data(), b.gates.data());
    for (int j = 0; j < moe.localExperts(); ++j) {
      std::copy(moe.expertInput(j), moe.expertInput(j) + moe.expertTokens(j) * kHidden, moe.expertOutput(j));
    }
    std::vector<float> out(tokens * kHidden, -1.0f);
    moe.combine(out.data());
    EXPECT_EQ(out, b.tokens);  // bit for bit
    EXPECT_EQ(moe.stats().dropped, 0u);
    EXPECT_EQ(moe.stats().assignments, tokens * c.topK);
  });
}

// fp32 rounding bound of an n-operation sum of products against its exact value: gamma_n * sum |terms|, with
// gamma_n = n u / (1 - n u) and u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms, 3.1).
double gamma(size_t n) {
  const double nu = double(n) * std::ldexp(1.0, -24);
  return nu / (1 - nu);
}

TEST_P(MoeRanks, LinearExpertsMatchASingleProcessForwardAndBackward) {
  const MoeCase c = GetParam();
  const int experts = 2 * c.ranks;
  const float cf = 1.0f;  // tight: random routing overflows some experts
  runRanks(c.ranks, [&](ternComm_t comm, int rank) {
    const size_t tokens = 64 + 5 * rank;  // ranks need not have the same token count
    Batch b = makeBatch(rank, tokens, c.topK, experts, false);
    Moe moe(comm, moeConfig(experts, c.topK, cf));
    moe.dispatch(b.tokens.data(), tokens, b.ids.data(), b.gates.data());
    for (int j = 0; j < moe.localExperts(); ++j) {
      applyExpert(moe.firstExpert() + j, moe.expertInput(j), moe.expertOutput(j), moe.expertTokens(j), false);
    }
    std::vector<float> out(tokens * kHidden);
    moe.combine(out.data());

    std::vector<float> gradOut(tokens * kHidden);
    for (size_t i = 0; i < gradOut.size(); ++i) gradOut[i] = std::cos(0.1f * i + rank);
    std::vector<float> gradGates(tokens * c.topK, -1.0f), gradTokens(tokens * kHidden);
    moe.combineBackward(gradOut.data(), gradGates.data());
    for (int j = 0; j < moe.localExperts(); ++j) {
      applyExpert(moe.firstExpert() + j, moe.expertGradOutput(j), moe.expertGradInput(j), moe.expertTokens(j), true);
    }
    moe.dispatchBackward(gradTokens.data());

    // Reference, from this rank's tokens alone, in double. Beside each exact value, the sum of the absolute values
    // of its terms, which bounds fp32's rounding (see gamma): the library's result is the expert's fp32 dot product
    // of kHidden terms, then combine's sum over topK gate products (and for the input gradient: the gate product
    // first, then the expert's transposed dot product, then the sum over topK).
    std::vector<bool> kept = keptMask(b, tokens, c.topK, experts, cf);
    size_t dropped = 0;
    std::vector<double> refOut(tokens * kHidden, 0.0), outScale(tokens * kHidden, 0.0);
    std::vector<double> refGradTokens(tokens * kHidden, 0.0), gradTokensScale(tokens * kHidden, 0.0);
    for (size_t t = 0; t < tokens; ++t) {
      const float* x = &b.tokens[t * kHidden];
      const float* dy = &gradOut[t * kHidden];
      for (int k = 0; k < c.topK; ++k) {
        const size_t a = t * c.topK + k;
        if (!kept[a]) {
          ++dropped;
          EXPECT_EQ(gradGates[a], 0.0f) << "rank " << rank << " token " << t << " choice " << k;
          continue;
        }
        const int e = b.ids[a];
        const double gate = b.gates[a];
        double dot = 0, dotScale = 0;
        for (size_t i = 0; i < kHidden; ++i) {
          double y = 0, yScale = 0;
          for (size_t j = 0; j < kHidden; ++j) {
            const double w = expertWeight(e, i, j);
            y += w * x[j];
            yScale += std::abs(w * x[j]);
            refGradTokens[t * kHidden + j] += w * gate * dy[i];
            gradTokensScale[t * kHidden + j] += std::abs(w * gate * dy[i]);
          }
          refOut[t * kHidden + i] += gate * y;
          outScale[t * kHidden + i] += std::abs(gate) * yScale;
          dot += dy[i] * y;
          dotScale += std::abs(double(dy[i])) * yScale;
        }
        // d out / d gate = the expert's output: an fp32 dot product of fp32 dot products, 2 kHidden operations deep.
        EXPECT_LE(std::abs(gradGates[a] - dot), gamma(2 * kHidden) * dotScale)
            << "rank " << rank << " token " << t << " choice " << k << ": " << gradGates[a] << " vs " << dot;
      }
    }
    EXPECT_GT(dropped, 0u);
    EXPECT_EQ(moe.stats().dropped, dropped);
    const size_t depth = kHidden + c.topK + 1;
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_LE(std::abs(out[i] - refOut[i]), gamma(depth) * outScale[i])
          << "rank " << rank << " element " << i << ": " << out[i] << " vs " << refOut[i];
      ASSERT_LE(std::abs(gradTokens[i] - refGradTokens[i]), gamma(depth) * gradTokensScale[i])
          << "rank " << rank << " element " << i << ": " << gradTokens[i] << " vs " << refGradTokens[i];
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Train, MoeRanks,
                         ::testing::Values(MoeCase{2, 1}, MoeCase{2, 2}, MoeCase{3, 1}, MoeCase{3, 2}, MoeCase{4, 1},
                                           MoeCase{4, 2}),
                         [](const auto& info) {
                           return "ranks" + std::to_string(info.param.ranks) + "_top" + std::to_string(info.param.topK);
                         });

TEST(Moe, OverCapacityTokensAreDroppedAndCounted) {
  constexpr int kRanks = 2, kExperts = 4;
  runRanks(kRanks, [&](ternComm_t comm, int rank) {
    const size_t tokens = rank == 0 ? 10 : 0;  // rank 1 sends nothing at all
    std::vector<float> x(tokens * kHidden, 1.0f), gates(tokens, 1.0f), out(tokens * kHidden);
    std::vector<int> ids(tokens, 0);  // everyone wants expert 0
    Moe moe(comm, moeConfig(kExperts, 1, 1.0f));
    moe.dispatch(x.data(), tokens, ids.data(), gates.data());
    ternMoeStats_t s = moe.stats();
    if (rank == 0) {
      EXPECT_EQ(s.capacity, 3u);  // ceil(1.0 * 10 * 1 / 4)
      EXPECT_EQ(s.dropped, 7u);
      EXPECT_EQ(moe.expertTokens(0), 3u);
    } else {
      EXPECT_EQ(s.assignments, 0u);
      EXPECT_EQ(moe.expertTokens(0), 0u);
    }
    for (int j = 0; j < moe.localExperts(); ++j) {
      std::copy(moe.expertInput(j), moe.expertInput(j) + moe.expertTokens(j) * kHidden, moe.expertOutput(j));
    }
    moe.combine(out.data());
    for (size_t t = 0; t < tokens; ++t) EXPECT_EQ(out[t * kHidden], t < 3 ? 1.0f : 0.0f) << "token " << t;
  });
}

TEST(Moe, RejectsBadConfigurations) {
  runRanks(2, [](ternComm_t comm, int) {
    ternMoeConfig_t c = moeConfig(3, 1, 1.0f);  // not a multiple of the rank count
    ternMoe_t moe = nullptr;
    EXPECT_EQ(ternMoeCreate(comm, &c, &moe), ternInvalidArgument);
    EXPECT_NE(std::string(ternTrainGetLastError()).find("multiple"), std::string::npos);
    c = moeConfig(2, 1, 1.0f);
    ASSERT_EQ(ternMoeCreate(comm, &c, &moe), ternSuccess);
    float out[kHidden];
    EXPECT_EQ(ternMoeCombine(moe, out), ternInvalidUsage);
    float x[kHidden] = {};
    int bad = 5;
    float g = 1;
    EXPECT_EQ(ternMoeDispatch(moe, x, 1, &bad, &g), ternInvalidArgument);
    EXPECT_EQ(ternMoeDestroy(moe), ternSuccess);
  });
}

}  // namespace
}  // namespace tern::train::testing
