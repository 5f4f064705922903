// ZeRO stages 1-3 on 1-4 ranks with SGD, Adam and AdamW end with the parameters of an independent single-process
// reference, the same on every rank bit for bit, and shard memory as advertised.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "rank_threads.hpp"
#include "reference_runs.hpp"
#include "tern/train.h"

namespace tern::train::testing {
namespace {

struct ZeroRun {
  Params params;
  ternZeroMemory_t memory;
  ternZeroStats_t stats;
};

ternZeroConfig_t zeroConfig(int stage, const ternOptimizerConfig_t& oc) {
  ternZeroConfig_t cfg;
  ternZeroConfigDefault(&cfg);
  cfg.stage = stage;
  cfg.optimizer = oc;
  cfg.bucketBytes = 256;  // several gradient buckets in stages 1-2
  return cfg;
}

// The tiny MLP trained with ZeRO: layers gathered just before use and released after, as a real model would.
ZeroRun zeroTrain(ternComm_t comm, int rank, int n, const ternZeroConfig_t& cfg, const TinyData& d, int steps,
                  size_t batch) {
  Params init = kModel.init(7 + rank);  // rank 0's values must win
  Zero z(comm, &cfg);
  std::vector<int> idx;
  for (int l = 0; l < kModel.layers(); ++l) {
    idx.push_back(z.addParameter(l, init[2 * l].size(), init[2 * l].data()));
    idx.push_back(z.addParameter(l, init[2 * l + 1].size(), init[2 * l + 1].data()));
  }
  z.finalize();
  LayerAccess a;
  a.before = [&](int l) { z.gather(l); };
  a.after = [&](int l) { z.release(l); };
  a.w = [&](int l) { return static_cast<const float*>(z.param(idx[2 * l])); };
  a.b = [&](int l) { return static_cast<const float*>(z.param(idx[2 * l + 1])); };
  a.dw = [&](int l) { return static_cast<float*>(z.grad(idx[2 * l])); };
  a.db = [&](int l) { return static_cast<float*>(z.grad(idx[2 * l + 1])); };
  a.ready = [&](int l) {
    z.gradReady(idx[2 * l + 1]);
    z.gradReady(idx[2 * l]);
  };
  const size_t slice = batch / n;
  for (int s = 0; s < steps; ++s) {
    kModel.step(d, s * batch + rank * slice, slice, a);
    z.step();
  }
  ZeroRun run;
  run.stats = z.stats();
  for (int l = 0; l < kModel.layers(); ++l) {
    z.gather(l);
    for (int k = 0; k < 2; ++k) {
      auto p = static_cast<const float*>(z.param(idx[2 * l + k]));
      run.params.emplace_back(p, p + init[2 * l + k].size());
    }
    z.release(l);
  }
  run.memory = z.memory();
  return run;
}

ternOptimizerConfig_t adam(ternOptimizerKind_t kind) {
  ternOptimizerConfig_t c;
  ternOptimizerConfigDefault(&c, kind);
  c.lr = 0.01f;
  c.weightDecay = 0.01f;
  return c;
}

struct ZeroCase {
  int stage;
  int ranks;
};

const char* optimizerName(ternOptimizerKind_t k) {
  return k == ternOptSgd ? "sgd" : k == ternOptAdam ? "adam" : "adamw";
}

void PrintTo(const ZeroCase& c, std::ostream* os) { *os << "stage " << c.stage << ", " << c.ranks << " ranks"; }

constexpr size_t kZeroBatch = 12;  // divisible by every rank count tested

class ZeroStages : public ::testing::TestWithParam<ZeroCase> {};

// The reference (reference_runs.hpp) is one process running the global batch as the ranks' slices, averaging their
// gradients in double and stepping the optimizer as written out in reference_optimizer.hpp, in double. ZeRO differs
// from it by fp32 rounding only. Per step, in units of max(1, |p|), with u = 2^-24:
//   - the optimizer update: at most 12 roundings (as optimizer_test derives): 12u;
//   - the mean gradient: an fp32 sum of N slice gradients then a division by N, within (N + 3)u/2 of the largest
//     slice gradient (partial sums grow to k times it). SGD passes that on times lr < 1. Adam passes on lr times it
//     over sqrt(v_hat), the running RMS of the mean gradient: again within (N + 3)u/2 wherever that RMS is above
//     lr times the largest slice gradient (true of this model and data; where slices cancel to less, any fp32
//     reduction, whatever its order, drifts from the exact mean);
// and parameters rounded differently in one step move the next step's gradients by no more than about as much
// again (a small model, lr < 1): a factor 2. Over S steps: 2 S (12 + (N + 3)/2) u, rounded up to 2 S (15 + N) u.
// A lost or unaveraged gradient shard, a stale parameter shard or a wrong optimizer formula moves parameters by
// about lr times a gradient, 1e-3 or more: a hundred times this bound.
TEST_P(ZeroStages, MatchAnIndependentReference) {
  const ZeroCase c = GetParam();
  TinyData d = makeTinyData(kSteps * kZeroBatch, 6, 3, 21);
  const double tolerance = 2.0 * kSteps * (15 + c.ranks) * std::ldexp(1.0, -24);
  for (auto kind : {ternOptSgd, ternOptAdam, ternOptAdamW}) {
    SCOPED_TRACE(optimizerName(kind));
    const ternOptimizerConfig_t oc = kind == ternOptSgd ? sgd() : adam(kind);
    const Params ref = slicedReference(d, kSteps, kZeroBatch, c.ranks, oc);
    std::mutex mu;
    std::vector<Params> zero(c.ranks);
    runRanks(c.ranks, [&](ternComm_t comm, int rank) {
      ZeroRun z = zeroTrain(comm, rank, c.ranks, zeroConfig(c.stage, oc), d, kSteps, kZeroBatch);
      std::lock_guard<std::mutex> lock(mu);
      zero[rank] = z.params;
    });
    ASSERT_EQ(zero[0].size(), ref.size());
    for (int r = 0; r < c.ranks; ++r) {
      EXPECT_LE(maxRelDiff(zero[r], ref), tolerance) << "rank " << r;
      for (size_t t = 0; t < ref.size(); ++t) {  // every rank assembles the same parameters, bit for bit
        EXPECT_EQ(zero[r][t], zero[0][t]) << "rank " << r << " tensor " << t;
      }
    }
    // The run moved the parameters well beyond the tolerance: a ZeRO that never stepped would fail above.
    EXPECT_GT(maxRelDiff(ref, kModel.init(7)), 100 * tolerance);
  }
}

std::vector<ZeroCase> allCases() {
  std::vector<ZeroCase> cases;
  for (int stage = 1; stage <= 3; ++stage) {
    for (int ranks = 1; ranks <= 4; ++ranks) cases.push_back({stage, ranks});
  }
  return cases;
}

// One test per stage and rank count, the three optimizers inside: each ctest entry costs a process start.
INSTANTIATE_TEST_SUITE_P(Train, ZeroStages, ::testing::ValuesIn(allCases()), [](const auto& info) {
  return "stage" + std::to_string(info.param.stage) + "_ranks" + std::to_string(info.param.ranks);
});

// A model big enough for the proportions to show: 4 layers of ~1 MB.
TEST(Zero, Stage3KeepsAboutOneNthOfTheParametersPerRank) {
  constexpr int kRanks = 4, kLayers = 4;
  constexpr size_t kCount = 250000;
  constexpr size_t kModelBytes = kLayers * kCount * 4;
  std::mutex mu;
  std::map<int, ternZeroMemory_t> byStage;
  for (int stage = 1; stage <= 3; ++stage) {
    runRanks(kRanks, [&](ternComm_t comm, int rank) {
      ternZeroConfig_t cfg = zeroConfig(stage, sgd());
      cfg.bucketBytes = 0;  // default buckets
      Zero z(comm, &cfg);
      std::vector<int> idx;
      std::vector<float> init(kCount, 0.25f);
      for (int l = 0; l < kLayers; ++l) idx.push_back(z.addParameter(l, kCount, init.data()));
      z.finalize();
      for (int step = 0; step < 2; ++step) {
        for (int l = 0; l < kLayers; ++l) {
          z.gather(l);
          EXPECT_FLOAT_EQ(static_cast<float*>(z.param(idx[l]))[kCount - 1], step == 0 ? 0.25f : 0.24f);
          z.release(l);
        }
        for (int l = kLayers - 1; l >= 0; --l) {
          z.gather(l);
          auto g = static_cast<float*>(z.grad(idx[l]));
          std::fill(g, g + kCount, step == 0 ? 0.1f : 0.0f);
          z.gradReady(idx[l]);
          z.release(l);
        }
        z.step();  // sgd lr 0.1, momentum: 0.25 - 0.01 after step 1
      }
      if (rank == 0) {
        std::lock_guard<std::mutex> lock(mu);
        byStage[stage] = z.memory();
      }
    });
  }
  const ternZeroMemory_t& m1 = byStage[1];
  const ternZeroMemory_t& m2 = byStage[2];
  const ternZeroMemory_t& m3 = byStage[3];
  EXPECT_EQ(m3.modelElements, kLayers * kCount);
  // Stages 1-2 keep full parameters; stage 1 full gradients too.
  EXPECT_EQ(m1.paramBytes, kModelBytes);
  EXPECT_EQ(m1.gradBytes, kModelBytes);
  EXPECT_EQ(m2.paramBytes, kModelBytes);
  EXPECT_EQ(m2.gradBytes, kModelBytes / kRanks);
  // Optimizer state (fp32 master + momentum) is sharded from stage 1 on.
  EXPECT_EQ(m1.optimizerBytes, 2 * kModelBytes / kRanks);
  // Stage 3: between steps a rank holds 1/N of the parameters, plus the first layer already being prefetched for
  // the next step; at peak, about two gathered layers more (the one in use and the prefetched one).
  const size_t layerBytes = kCount * 4;
  EXPECT_LE(m3.paramBytes, kModelBytes / kRanks + layerBytes);
  EXPECT_GE(m3.paramBytes, kModelBytes / kRanks);
  EXPECT_LE(m3.paramPeakBytes, kModelBytes / kRanks + 2 * layerBytes);
  EXPECT_EQ(m3.gradBytes, kModelBytes / kRanks);
  EXPECT_LE(m3.gradPeakBytes, kModelBytes / kRanks + 2 * layerBytes);
  // fp32 parameters: in stage 3 the master weights are the shard itself, only momentum is extra.
  EXPECT_EQ(m3.optimizerBytes, kModelBytes / kRanks);
}

TEST(Zero, HalfPrecisionParametersKeepFp32MasterWeights) {
  runRanks(2, [](ternComm_t comm, int) {
    ternZeroConfig_t cfg = zeroConfig(3, sgd());
    cfg.paramDtype = ternBfloat16;
    cfg.optimizer.momentum = 0;
    cfg.optimizer.lr = 1.0f;
    Zero z(comm, &cfg);
    std::vector<uint16_t> init(8, 0x3f80);  // bf16 1.0
    int i = z.addParameter(0, init.size(), init.data());
    z.finalize();
    // Steps of 1/1024 are below bf16's resolution at 1.0 (1/128): only fp32 master weights accumulate them.
    for (int step = 0; step < 16; ++step) {
      z.gather(0);
      auto g = static_cast<uint16_t*>(z.grad(i));
      std::fill(g, g + init.size(), uint16_t{0x3a80});  // bf16 2^-10
      z.gradReady(i);
      z.release(0);
      z.step();
    }
    z.gather(0);
    auto p = static_cast<const uint16_t*>(z.param(i));
    EXPECT_EQ(p[0], 0x3f7c);  // 1 - 16/1024 = 0.984375, exact in bf16
    ternZeroMemory_t m = z.memory();
    EXPECT_EQ(m.optimizerBytes, 4 * 4u);  // fp32 master of this rank's 4-element shard, no momentum
  });
}

TEST(Zero, CApiReportsMisuse) {
  runRanks(2, [](ternComm_t comm, int) {
    ternZeroConfig_t cfg;
    ternZeroConfigDefault(&cfg);
    cfg.stage = 3;
    ternZero_t z = nullptr;
    ASSERT_EQ(ternZeroCreate(comm, &cfg, &z), ternSuccess);
    float init[5] = {1, 2, 3, 4, 5};
    int idx = -1;
    ASSERT_EQ(ternZeroAddParameter(z, 0, 5, init, &idx), ternSuccess);
    ASSERT_EQ(ternZeroFinalize(z), ternSuccess);
    void* p = nullptr;
    EXPECT_EQ(ternZeroParam(z, idx, &p), ternInvalidUsage);
    EXPECT_NE(std::strstr(ternTrainGetLastError(), "not gathered"), nullptr) << ternTrainGetLastError();
    ASSERT_EQ(ternZeroGather(z, 0), ternSuccess);
    ASSERT_EQ(ternZeroParam(z, idx, &p), ternSuccess);
    EXPECT_FLOAT_EQ(static_cast<float*>(p)[4], 5.0f);
    ASSERT_EQ(ternZeroRelease(z, 0), ternSuccess);
    ASSERT_EQ(ternZeroStep(z), ternSuccess);  // no gradient reported: zero, parameters unchanged
    ternZeroMemory_t m;
    ASSERT_EQ(ternZeroGetMemory(z, &m), ternSuccess);
    EXPECT_EQ(m.modelElements, 5u);
    EXPECT_EQ(ternZeroDestroy(z), ternSuccess);
    cfg.stage = 4;
    EXPECT_EQ(ternZeroCreate(comm, &cfg, &z), ternInvalidArgument);
  });
}

}  // namespace
}  // namespace tern::train::testing
