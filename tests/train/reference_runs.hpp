// Runs shared by the DDP and ZeRO tests: the single-process references and a DDP run of the tiny MLP. The
// references never call the library: their optimizer is reference_optimizer.hpp's, written out from the formulas
// ternOptimizerKind_t documents, and the gradients of several slices are averaged here in double.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "reference_optimizer.hpp"
#include "tern/train.h"
#include "tiny_mlp.hpp"

namespace tern::train::testing {

using Params = std::vector<std::vector<float>>;

inline const TinyMlp kModel{{6, 12, 10, 3}};
constexpr size_t kBatch = 16;
constexpr int kSteps = 5;

inline ternOptimizerConfig_t sgd() {
  ternOptimizerConfig_t c;
  ternOptimizerConfigDefault(&c, ternOptSgd);
  c.lr = 0.1f;
  c.momentum = 0.9f;
  return c;
}

inline LayerAccess access(
    Params& p, Params& g, std::function<void(int)> ready = [](int) {}) {
  LayerAccess a;
  a.w = [&](int l) { return p[2 * l].data(); };
  a.b = [&](int l) { return p[2 * l + 1].data(); };
  a.dw = [&](int l) { return g[2 * l].data(); };
  a.db = [&](int l) { return g[2 * l + 1].data(); };
  a.ready = std::move(ready);
  return a;
}

// One process, full batch: what distributed runs must reproduce.
inline Params reference(const TinyData& d, int steps, size_t batch, const ternOptimizerConfig_t& oc) {
  Params p = kModel.init(7), g = p;
  std::vector<ReferenceOptimizer> opts;
  for (auto& t : p) opts.emplace_back(oc, t);
  for (int s = 0; s < steps; ++s) {
    kModel.step(d, s * batch, batch, access(p, g));
    for (size_t t = 0; t < p.size(); ++t) {
      opts[t].step(std::vector<double>(g[t].begin(), g[t].end()));
      opts[t].store(p[t]);
    }
  }
  return p;
}

// One process, each step's batch as n consecutive slices of batch/n samples (rank r's slice is the r-th): every
// slice's gradient (of its mean loss) comes from the same model code the ranks run, and the n are summed in double
// in rank order and divided by n: the global-batch mean gradient, where the ranks' float32 all-reduce rounds it.
inline Params slicedReference(const TinyData& d, int steps, size_t batch, int n, const ternOptimizerConfig_t& oc) {
  Params p = kModel.init(7), g = p;
  std::vector<ReferenceOptimizer> opts;
  for (auto& t : p) opts.emplace_back(oc, t);
  const size_t slice = batch / n;
  for (int s = 0; s < steps; ++s) {
    std::vector<std::vector<double>> sum(p.size());
    for (size_t t = 0; t < p.size(); ++t) sum[t].assign(p[t].size(), 0.0);
    for (int r = 0; r < n; ++r) {
      kModel.step(d, s * batch + r * slice, slice, access(p, g));
      for (size_t t = 0; t < p.size(); ++t) {
        for (size_t i = 0; i < p[t].size(); ++i) sum[t][i] += g[t][i];
      }
    }
    for (size_t t = 0; t < p.size(); ++t) {
      for (double& v : sum[t]) v /= n;
      opts[t].step(sum[t]);
      opts[t].store(p[t]);
    }
  }
  return p;
}

struct DdpRun {
  Params params;
  ternDdpStats_t stats;
};

// DDP on this rank: micro-step m of step s uses this rank's B/(N*micro) slice of the step's B samples.
inline DdpRun ddpTrain(ternComm_t comm, int rank, int n, ternDdpConfig_t cfg, const TinyData& d, int steps,
                       const ternOptimizerConfig_t& oc) {
  const int micro = cfg.accumulationSteps;
  Params p = kModel.init(7 + rank), g = p;  // ranks start different: finalize's broadcast must fix that
  Ddp ddp(comm, &cfg);
  std::vector<int> idx;
  for (size_t t = 0; t < p.size(); ++t) idx.push_back(ddp.addParameter(p[t].data(), g[t].data(), p[t].size()));
  ddp.finalize();
  std::vector<Optimizer> opts;
  for (auto& t : p) opts.emplace_back(oc, t.size());
  const size_t slice = kBatch / (n * micro);
  for (int s = 0; s < steps; ++s) {
    for (int m = 0; m < micro; ++m) {
      size_t first = s * kBatch + (m * n + rank) * slice;
      kModel.step(d, first, slice, access(p, g, [&](int l) {
                    ddp.gradReady(idx[2 * l + 1]);
                    ddp.gradReady(idx[2 * l]);
                  }));
      bool synced = ddp.finish();
      EXPECT_EQ(synced, m == micro - 1);
    }
    for (size_t t = 0; t < p.size(); ++t) opts[t].step(p[t].data(), g[t].data());
  }
  return {p, ddp.stats()};
}

}  // namespace tern::train::testing
