// Selection on the reference topologies: latency algorithms for small messages, bandwidth algorithms for large
// ones, hierarchical across nodes; TERN_ALGO forcing and exclusion; ring orders from the topology.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "base/error.hpp"
#include "core/algo_choice.hpp"
#include "planner/cluster_spec.hpp"
#include "planner/planner.hpp"
#include "planner/ring_order.hpp"
#include "planner/training.hpp"
#include "topo/topo_file.hpp"

namespace tern::planner {
namespace {

namespace fs = std::filesystem;

fs::path sourceDir() {
  if (const char* env = std::getenv("TERN_SOURCE_DIR")) return env;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

std::shared_ptr<const topo::JobTopology> load(const std::string& name, int hosts = 0) {
  topo::JobTopology job = topo::loadTopologyFile((sourceDir() / "topo" / name).string());
  if (hosts > 0) job = firstHosts(job, hosts);
  return std::make_shared<const topo::JobTopology>(std::move(job));
}

std::shared_ptr<const Planner> plannerFor(std::shared_ptr<const topo::JobTopology> job) {
  PlannerConfig c;
  c.job = std::move(job);
  return std::make_shared<const Planner>(c);
}

std::string pick(const std::shared_ptr<const Planner>& p, Collective c, double bytes, const std::string& algo = "") {
  ChoiceContext ctx;
  ctx.nranks = p->nranks();
  ctx.planner = p;
  const CollArgs args = argsForBytes(c, bytes, p->nranks());
  return chooseAlgorithm(args, ctx, AlgoOverride::parse(algo)).name;
}

const std::set<std::string> kLatency = {"rd", "tree", "binomial", "bruck", "rh"};
const std::set<std::string> kBandwidth = {"ring", "rhd", "dbtree", "chain", "scatter_allgather", "hier", "rh"};

class ReferenceTopologies : public ::testing::TestWithParam<const char*> {};

// The pick is a latency algorithm, or costs no more than the best of them (two ranks: every algorithm is one
// exchange, and hierarchical across two nodes is also one network hop).
void expectLatencyPick(const std::shared_ptr<const Planner>& p, Collective c, double bytes, const std::string& tag) {
  const std::string chosen = pick(p, c, bytes);
  if (kLatency.count(chosen)) return;
  double best = -1, mine = -1;
  for (const Estimate& e : p->rank(c, Planner::bucketBytes(Planner::sizeBucket(bytes)))) {
    if (kLatency.count(e.algorithm) && (best < 0 || e.seconds < best)) best = e.seconds;
    if (e.algorithm == chosen) mine = e.seconds;
  }
  EXPECT_LE(mine, best * 1.0000001) << tag << " " << collectiveName(c) << ": " << chosen;
}

TEST_P(ReferenceTopologies, SensiblePicks) {
  const auto multi = plannerFor(load(GetParam()));
  const auto single = plannerFor(load(GetParam(), 1));
  ASSERT_GT(multi->numHosts(), 1);
  for (const auto& p : {multi, single}) {
    const std::string tag = std::string(GetParam()) + (p == multi ? " (all hosts)" : " (one host)");
    EXPECT_TRUE(kLatency.count(pick(p, Collective::kAllReduce, 8)))
        << tag << ": " << pick(p, Collective::kAllReduce, 8);
    expectLatencyPick(p, Collective::kAllGather, 64, tag);
    expectLatencyPick(p, Collective::kBroadcast, 8, tag);
    expectLatencyPick(p, Collective::kReduce, 8, tag);
  }
  // Large messages: bandwidth algorithms on one host, hierarchical across hosts.
  const std::string large = pick(single, Collective::kAllReduce, 256e6);
  EXPECT_TRUE(kBandwidth.count(large) && large != "hier") << GetParam() << ": " << large;
  EXPECT_EQ(pick(multi, Collective::kAllReduce, 256e6), "hier") << GetParam();
  EXPECT_TRUE(kBandwidth.count(pick(single, Collective::kBroadcast, 256e6)));
  EXPECT_EQ(pick(multi, Collective::kAllGather, 256e6), "hier") << GetParam();
  EXPECT_EQ(pick(multi, Collective::kReduceScatter, 256e6), "hier") << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Files, ReferenceTopologies,
                         ::testing::Values("dgx-h100.json", "dgx-a100.json", "pcie-4gpu-100g.json", "roce25-2x2.json",
                                           "cpu-2node-1g.json"));

TEST(PlannerSelect, TernAlgoForcesAndExcludes) {
  const auto p = plannerFor(load("roce25-2x2.json"));
  EXPECT_EQ(pick(p, Collective::kAllReduce, 8, "ring"), "ring");
  EXPECT_EQ(pick(p, Collective::kAllReduce, 256e6, "allreduce:rd"), "rd");
  EXPECT_EQ(pick(p, Collective::kAllReduce, 256e6, "allgather:bruck"), "hier");  // another collective's rule
  EXPECT_NE(pick(p, Collective::kAllReduce, 256e6, "^hier"), "hier");
  const std::string small = pick(p, Collective::kAllReduce, 8);
  EXPECT_NE(pick(p, Collective::kAllReduce, 8, "^" + small), small);
  const std::string both = pick(p, Collective::kAllReduce, 8, "allreduce:^rd,tree,dbtree");
  EXPECT_TRUE(both != "rd" && both != "tree" && both != "dbtree") << both;
  EXPECT_THROW(pick(p, Collective::kAllReduce, 8, "^ring,tree,dbtree,rd,rhd,hier"), Error);
}

TEST(PlannerSelect, ChoiceIsTheCheapestAndStableWithinABucket) {
  const auto p = plannerFor(load("pcie-4gpu-100g.json"));
  for (double bytes : {1e3, 1e5, 1e7}) {
    const auto ranked = p->rank(Collective::kAllReduce, Planner::bucketBytes(Planner::sizeBucket(bytes)));
    EXPECT_EQ(pick(p, Collective::kAllReduce, bytes), ranked.front().algorithm);
    for (size_t i = 1; i < ranked.size(); ++i) EXPECT_LE(ranked[i - 1].seconds, ranked[i].seconds);
  }
  EXPECT_EQ(Planner::sizeBucket(1 << 20), 80);
  EXPECT_EQ(Planner::bucketBytes(80), 1 << 20);
}

TEST(PlannerSelect, DirectPathAgainstTheSchedules) {
  // One host of 2 GPU ranks; with "shm" calibrated the direct path competes on its estimate, without it the direct
  // path wins wherever it applies (an unmeasured default does not overrule the transport's choice).
  PlannerConfig measured;
  measured.job = std::make_shared<const topo::JobTopology>(firstHosts(*load("roce25-2x2.json"), 1));
  measured.params.links["shm"] = {{1e-6, 1e-10}, -1};
  ChoiceContext ctx;
  ctx.nranks = 2;
  ctx.planner = std::make_shared<const Planner>(measured);
  const CollArgs args = argsForBytes(Collective::kAllReduce, 1e6, 2);
  DirectOption fast{"shm_pipelined", [](const CollArgs&) { return 1e-9; }};
  DirectOption slow{"shm_pipelined", [](const CollArgs&) { return 10.0; }};
  DirectOption none{"shm_pipelined", [](const CollArgs&) { return -1.0; }};
  const AlgoOverride no = AlgoOverride::parse("");
  EXPECT_TRUE(chooseWithDirect(args, ctx, no, fast).direct);
  EXPECT_EQ(chooseWithDirect(args, ctx, no, fast).name, "shm_pipelined");
  EXPECT_FALSE(chooseWithDirect(args, ctx, no, slow).direct);
  EXPECT_FALSE(chooseWithDirect(args, ctx, no, none).direct);
  EXPECT_FALSE(chooseWithDirect(args, ctx, AlgoOverride::parse("ring"), fast).direct);  // forced
  ctx.planner = plannerFor(load("roce25-2x2.json", 1));                                 // "shm" not measured
  EXPECT_FALSE(ctx.planner->shmSchedulesCalibrated());
  EXPECT_TRUE(chooseWithDirect(args, ctx, no, slow).direct);
  EXPECT_FALSE(chooseWithDirect(args, ctx, no, none).direct);
  // A calibrated shm_direct figure replaces the transport's own estimate (but not its "does not apply").
  EXPECT_DOUBLE_EQ(directSeconds(args, ctx, slow), 10.0);
  measured.params.shmDirect = DirectCost{1e-6, 1e-11};  // 100 GB/s: faster than the 10 GB/s ring
  ctx.planner = std::make_shared<const Planner>(measured);
  EXPECT_NEAR(directSeconds(args, ctx, slow), 1e-6 + 1e6 * 1e-11, 1e-12);  // 2 ranks: busFactor 1
  EXPECT_LT(directSeconds(args, ctx, none), 0);
  EXPECT_TRUE(chooseWithDirect(args, ctx, no, slow).direct);
  const Choice ch = chooseWithDirect(args, ctx, no, slow);
  EXPECT_NEAR(predictChoiceSeconds(args, ctx, ch, slow), 1e-6 + 1e6 * 1e-11, 1e-12);
}

TEST(PlannerSelect, DefaultsWithoutTopology) {
  // A communicator without the hook: the context's rank count (and host map) only.
  ChoiceContext ctx;
  ctx.nranks = 4;
  EXPECT_TRUE(kLatency.count(chooseAlgorithm(argsForBytes(Collective::kAllReduce, 8, 4), ctx, {}).name));
  EXPECT_TRUE(kBandwidth.count(chooseAlgorithm(argsForBytes(Collective::kAllReduce, 64e6, 4), ctx, {}).name));
  ctx.hostOf = {0, 0, 1, 1};
  EXPECT_STREQ(chooseAlgorithm(argsForBytes(Collective::kAllReduce, 64e6, 4), ctx, {}).name, "hier");
  EXPECT_GT(predictSeconds(argsForBytes(Collective::kAllReduce, 64e6, 4), ctx, "ring"), 0);
  EXPECT_LT(predictSeconds(argsForBytes(Collective::kAllReduce, 64e6, 4), ctx, "nope"), 0);
}

TEST(PlannerRingOrder, HostsAdjacentAndLocalityInside) {
  // Ranks placed host 0, 1, 0, 1: the ring visits 0, 2 then 1, 3.
  topo::JobTopology job = buildCluster(presetSpec("cpu-2node-1g"), "c");
  std::swap(job.ranks[1], job.ranks[2]);
  EXPECT_EQ(topologyRingOrder(job), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(hostOfRanks(job), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(ringOrderFromHostOf({0, 1, 0, 1}, 4), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(ringOrderFromHostOf({}, 3), (std::vector<int>{0, 1, 2}));
  // PCIe: GPUs behind one switch are neighbours (pcie-4gpu-100g: gpu0,1 on sw0, gpu2,3 on sw1).
  const auto pcie = load("pcie-4gpu-100g.json");
  const std::vector<int> order = topologyRingOrder(*pcie);
  ASSERT_EQ(order.size(), 8u);
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(std::vector<int>(order.begin() + 4, order.end()), (std::vector<int>{4, 5, 6, 7}));
}

}  // namespace
}  // namespace tern::planner
