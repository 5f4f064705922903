// The optimizers against hand-computed updates, and over many steps against the documented formulas evaluated in
// double (reference_optimizer.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "reference_optimizer.hpp"
#include "tern/train.h"

namespace tern::train {
namespace {

TEST(Optimizer, SgdWithMomentum) {
  ternOptimizerConfig_t c;
  ternOptimizerConfigDefault(&c, ternOptSgd);
  c.lr = 0.5f;
  c.momentum = 0.5f;
  Optimizer opt(c, 1);
  float p = 1.0f, g = 1.0f;
  opt.step(&p, &g);  // v = 1, p = 0.5
  EXPECT_FLOAT_EQ(p, 0.5f);
  opt.step(&p, &g);  // v = 1.5, p = -0.25
  EXPECT_FLOAT_EQ(p, -0.25f);
  EXPECT_EQ(opt.stateBytes(), sizeof(float));
}

TEST(Optimizer, AdamFirstStepMovesByLr) {
  for (auto kind : {ternOptAdam, ternOptAdamW}) {
    ternOptimizerConfig_t c;
    ternOptimizerConfigDefault(&c, kind);
    c.lr = 0.1f;
    Optimizer opt(c, 2);
    float p[2] = {1.0f, 1.0f}, g[2] = {3.0f, -0.001f};
    opt.step(p, g);  // bias-corrected m / sqrt(v) = sign(g) on the first step
    EXPECT_NEAR(p[0], 0.9f, 1e-6);
    EXPECT_NEAR(p[1], 1.1f, 1e-4);
    EXPECT_EQ(opt.stateBytes(), 4 * sizeof(float));
  }
}

TEST(Optimizer, AdamWDecaysDecoupled) {
  ternOptimizerConfig_t c;
  ternOptimizerConfigDefault(&c, ternOptAdamW);
  c.lr = 0.1f;
  c.weightDecay = 0.5f;
  Optimizer opt(c, 1);
  float p = 2.0f, g = 0.0f;
  opt.step(&p, &g);  // p -= lr * wd * p, and the zero gradient moves nothing
  EXPECT_FLOAT_EQ(p, 1.9f);
}

struct FormulaCase {
  const char* name;
  ternOptimizerKind_t kind;
  float lr, momentum, beta1, beta2, weightDecay;
};

// Every kind and hyper-parameter path over several steps (bias correction changes every step; a schedule changes
// lr half way), on gradients of mixed signs and sizes: some of order 1, some far below eps (where eps's place in the
// denominator decides the step), some exactly zero, and a sign that flips (momentum and moments must carry it).
TEST(Optimizer, FollowsTheDocumentedFormulasOverManySteps) {
  constexpr size_t kCount = 48;
  constexpr int kSteps = 12;
  for (FormulaCase c : {FormulaCase{"sgd", ternOptSgd, 0.1f, 0.0f, 0, 0, 0.0f},
                        FormulaCase{"sgd+wd", ternOptSgd, 0.1f, 0.0f, 0, 0, 0.05f},
                        FormulaCase{"momentum+wd", ternOptSgd, 0.05f, 0.9f, 0, 0, 0.01f},
                        FormulaCase{"adam", ternOptAdam, 0.01f, 0, 0.9f, 0.999f, 0.0f},
                        FormulaCase{"adam+l2", ternOptAdam, 0.01f, 0, 0.8f, 0.99f, 0.1f},
                        FormulaCase{"adamw", ternOptAdamW, 0.02f, 0, 0.9f, 0.999f, 0.1f}}) {
    SCOPED_TRACE(c.name);
    ternOptimizerConfig_t config;
    ternOptimizerConfigDefault(&config, c.kind);
    config.lr = c.lr;
    config.momentum = c.momentum;
    if (c.kind != ternOptSgd) {
      config.beta1 = c.beta1;
      config.beta2 = c.beta2;
    }
    config.weightDecay = c.weightDecay;
    std::vector<float> p(kCount);
    for (size_t i = 0; i < kCount; ++i) p[i] = 1.5f * std::cos(0.37f * i);
    Optimizer opt(config, kCount);
    testing::ReferenceOptimizer ref(config, p);
    std::vector<float> g(kCount);
    std::vector<double> gd(kCount);
    for (int t = 0; t < kSteps; ++t) {
      if (t == kSteps / 2) {
        opt.setLr(c.lr / 4);
        ref.setLr(c.lr / 4);
      }
      for (size_t i = 0; i < kCount; ++i) {
        const float scale = i % 4 == 0 ? 1e-9f : i % 4 == 1 ? 0.0f : 1.0f;  // below eps, zero, order 1
        g[i] = scale * std::sin(0.9f * i + 0.5f * t) * (t % 5 == 4 ? -1.0f : 1.0f);
        gd[i] = g[i];
      }
      opt.step(p.data(), g.data());
      ref.step(gd);
    }
    std::vector<float> expected;
    ref.store(expected);
    // The fp32 update of one element takes at most ~12 roundings per step (SGD: 4; Adam: the two moments, the
    // bias-corrected step size, sqrt, eps, divide, multiply, subtract), each within u = 2^-24 of a value no larger
    // than max(1, |p|) here; the moments carry their earlier errors forward but, being convex combinations, do not
    // grow them. So after T steps the parameters lie within T * 12 * u * max(1, |p|) of the exact update.
    const double u = std::ldexp(1.0, -24);
    for (size_t i = 0; i < kCount; ++i) {
      const double scale = std::max(1.0, std::abs(double(expected[i])));
      ASSERT_LE(std::abs(double(p[i]) - expected[i]), kSteps * 12 * u * scale)
          << "element " << i << ": " << p[i] << " vs " << expected[i];
    }
  }
}

TEST(Optimizer, CApi) {
  ternOptimizerConfig_t c;
  ternOptimizerConfigDefault(&c, ternOptSgd);
  c.momentum = 0;
  c.lr = 1;
  ternOptimizer_t opt = nullptr;
  ASSERT_EQ(ternOptimizerCreate(&c, 3, &opt), ternSuccess);
  float p[3] = {1, 2, 3}, g[3] = {1, 1, 1};
  ASSERT_EQ(ternOptimizerStep(opt, p, g), ternSuccess);
  EXPECT_FLOAT_EQ(p[2], 2.0f);
  EXPECT_EQ(ternOptimizerStep(opt, nullptr, g), ternInvalidArgument);
  EXPECT_EQ(ternOptimizerDestroy(opt), ternSuccess);
  c.kind = static_cast<ternOptimizerKind_t>(9);
  EXPECT_EQ(ternOptimizerCreate(&c, 3, &opt), ternInvalidArgument);
  EXPECT_NE(std::string(ternTrainGetLastError()).find("optimizer kind"), std::string::npos);
}

}  // namespace
}  // namespace tern::train
