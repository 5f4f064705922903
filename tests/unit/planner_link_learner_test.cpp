// Learning the network from timed calls: the fit recovers the link that produced the times, keeps alpha when the
// sizes cannot separate it, refuses what it cannot learn, and changes the compression decision it is meant to.
#include <gtest/gtest.h>

#include <memory>

#include "planner/cluster_spec.hpp"
#include "planner/link_learner.hpp"

namespace tern::planner {
namespace {

// 2 hosts x 2 CPU ranks over shared memory inside a host: the simulated cluster's shape.
PlannerConfig twoByTwo() {
  PlannerConfig c;
  c.job = std::make_shared<const topo::JobTopology>(jobFromHostIds({"a", "a", "b", "b"}));
  c.intra = IntraTransport::kShm;
  return c;
}

// The same job on a network with this alpha and beta: what "really" produced the times.
PlannerConfig withNetwork(PlannerConfig c, double alpha, double beta) {
  LinkCalibration net;
  net.cost = {alpha, beta};
  c.params.links["network"] = net;
  return c;
}

// The times the true network gives for an allreduce of each size, with the algorithm the true model picks.
std::vector<TimedCall> timedAllreduces(const PlannerConfig& truth, const std::vector<double>& sizes) {
  const Planner p(truth);
  std::vector<TimedCall> calls;
  for (double bytes : sizes) {
    const Estimate best = p.rank(Collective::kAllReduce, bytes).front();
    calls.push_back({Collective::kAllReduce, best.algorithm, ternFloat32, bytes, best.seconds});
  }
  return calls;
}

constexpr double kGbE = 1.0 / 0.119e9;  // a 1 Gb/s link's TCP payload, seconds per byte

TEST(LinkLearner, RecoversTheNetworkThatProducedTheTimes) {
  const PlannerConfig start = twoByTwo();
  const PlannerConfig truth = withNetwork(start, 80e-6, kGbE);
  const auto calls = timedAllreduces(truth, {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20});
  const auto learned = learnNetwork(start, calls);
  ASSERT_TRUE(learned.has_value());
  EXPECT_TRUE(learned->alphaFitted);
  EXPECT_NEAR(learned->network.cost.beta / kGbE, 1.0, 0.02);
  EXPECT_NEAR(learned->network.cost.alpha / 80e-6, 1.0, 0.15);
  EXPECT_LT(learned->rmsError, 0.02);
  EXPECT_EQ(learned->callsUsed, 5);
  EXPECT_EQ(learned->network.speedGbps, -1);
}

TEST(LinkLearner, OneSizeFitsBetaAndKeepsAlpha) {
  const PlannerConfig start = twoByTwo();
  const PlannerConfig truth = withNetwork(start, 30e-6, 2 * kGbE);
  std::vector<TimedCall> calls = timedAllreduces(truth, {4 << 20});
  calls.push_back(calls.front());  // the same bucket every step, as in training
  const auto learned = learnNetwork(start, calls);
  ASSERT_TRUE(learned.has_value());
  EXPECT_FALSE(learned->alphaFitted);
  // 4 MB at 0.06 GB/s: bandwidth dominates, so beta comes out close even with the start's alpha.
  EXPECT_NEAR(learned->network.cost.beta / (2 * kGbE), 1.0, 0.03);
}

TEST(LinkLearner, NothingToLearnWithoutANetwork) {
  PlannerConfig oneHost;
  oneHost.job = std::make_shared<const topo::JobTopology>(jobFromHostIds({"a", "a"}));
  oneHost.intra = IntraTransport::kShm;
  EXPECT_FALSE(learnNetwork(oneHost, {{Collective::kAllReduce, "ring", ternFloat32, 1 << 20, 1e-3}}).has_value());
}

TEST(LinkLearner, TimesBelowTheRestOfThePathTeachNothing) {
  const PlannerConfig start = twoByTwo();
  // Faster than any network could make it: no positive beta explains it.
  EXPECT_FALSE(learnNetwork(start, {{Collective::kAllReduce, "hier", ternFloat32, 16 << 20, 1e-9}}).has_value());
  EXPECT_FALSE(learnNetwork(start, {}).has_value());
  EXPECT_FALSE(learnNetwork(start, {{Collective::kAllReduce, "no_such_algorithm", ternFloat32, 1 << 20, 1e-3}}));
}

TEST(LinkLearner, LearnedSlowLinkMakesCompressionPay) {
  PlannerConfig start = twoByTwo();
  topo::JobTopology fast = *start.job;
  fast.network.speedGbps = 100;  // what the NICs say; the job gets far less
  start.job = std::make_shared<const topo::JobTopology>(fast);
  const double bytes = 4 << 20;
  auto compressionPays = [&](const PlannerConfig& c, const char* codec) {
    const Planner p(c);
    return p.estimateCompressed(Collective::kAllReduce, bytes, codec).seconds <
           p.rank(Collective::kAllReduce, bytes).front().seconds;
  };
  // The NICs' line rate gives bf16 nothing to win; the learned 1 Gb/s link does.
  ASSERT_FALSE(compressionPays(start, "bf16"));
  ASSERT_FALSE(compressionPays(start, "sign"));
  const auto learned = learnNetwork(start, timedAllreduces(withNetwork(start, 60e-6, kGbE), {1 << 20, 4 << 20}));
  ASSERT_TRUE(learned.has_value());
  PlannerConfig refined = start;
  refined.params = withLearnedNetwork(start.params, *learned);
  EXPECT_TRUE(compressionPays(refined, "bf16"));
  EXPECT_TRUE(compressionPays(refined, "sign"));
}

TEST(LinkLearner, LearnedFigureReplacesPerKindEntries) {
  CostParams p = defaultCostParams();
  p.links["network:ethernet"].cost = {1e-6, 1e-12};
  LearnedNetwork l;
  l.network.cost = {5e-5, 1e-8};
  const CostParams q = withLearnedNetwork(p, l);
  EXPECT_EQ(q.links.count("network:ethernet"), 0u);
  ASSERT_NE(q.find(ModelLink::kNetwork, topo::NetKind::kEthernet), nullptr);
  EXPECT_DOUBLE_EQ(q.find(ModelLink::kNetwork, topo::NetKind::kEthernet)->cost.beta, 1e-8);
}

}  // namespace
}  // namespace tern::planner
