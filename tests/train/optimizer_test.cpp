// The optimizers against hand-computed updates.
#include <gtest/gtest.h>

#include <cmath>

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
