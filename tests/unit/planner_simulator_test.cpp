// The discrete-event simulator against the closed forms on uniform links, and contention on shared NICs.
#include <gtest/gtest.h>

#include <memory>

#include "algorithms/registry.hpp"
#include "planner/cluster_spec.hpp"
#include "planner/formulas.hpp"
#include "planner/planner.hpp"
#include "planner/simulator.hpp"

namespace tern::planner {
namespace {

// One host of p CPU ranks whose shared-memory links are calibrated to (alpha, beta): every pair alike.
PlannerConfig uniformHost(int p, double alpha, double beta, double gamma, size_t chunk) {
  ClusterSpec s;
  s.nodes = 1;
  s.ranksPerNode = p;
  s.intra = IntraKind::kShm;
  PlannerConfig c;
  c.job = std::make_shared<const topo::JobTopology>(buildCluster(s, "uniform"));
  c.intra = IntraTransport::kShm;
  c.params.links["shm"] = {{alpha, beta}, -1};
  c.params.cpu = {gamma, 0.0};
  c.pipelineChunkBytes = chunk;
  return c;
}

TEST(PlannerSimulator, UnchunkedRingMatchesClosedForm) {
  for (int p : {2, 3, 4, 8}) {
    const double alpha = 5e-6, beta = 1.0 / 2e9, gamma = 1.0 / 8e9;
    Planner planner(uniformHost(p, alpha, beta, gamma, 0));
    const double n = 64.0 * 1024 * 1024;
    const Estimate e = planner.estimate(Collective::kAllReduce, n, "ring");
    ASSERT_TRUE(e.error.empty()) << e.error;
    FormulaInputs in;
    in.p = p;
    in.n = n;
    in.alpha = alpha;
    in.beta = beta;
    in.gamma = gamma;
    const double closed = closedForm(Collective::kAllReduce, "ring", in)->seconds;
    EXPECT_NEAR(e.seconds, closed, closed * 1e-3) << "p=" << p;
    // The breakdown adds up, and says what the time is made of.
    EXPECT_NEAR(e.critical.total(), e.seconds, e.seconds * 1e-9);
    EXPECT_NEAR(e.critical.latency[static_cast<int>(ModelLink::kShm)], 2 * (p - 1) * alpha, 1e-12);
  }
}

TEST(PlannerSimulator, RecursiveDoublingMatchesClosedForm) {
  const double alpha = 3e-6, beta = 1.0 / 4e9, gamma = 1.0 / 8e9;
  Planner planner(uniformHost(4, alpha, beta, gamma, 0));
  const double n = 4096;
  const Estimate e = planner.estimate(Collective::kAllReduce, n, "rd");
  FormulaInputs in{4, n, alpha, beta, gamma};
  EXPECT_NEAR(e.seconds, closedForm(Collective::kAllReduce, "rd", in)->seconds, 1e-9);
}

// Pairwise all-to-all posts its n-1 sends at once; the ports carry them in whatever order the receivers allow
// (a gap left on a port is filled by a later-posted send), so the bytes take (p-1) message times, as on a
// switch, not a chain of waits for the last reservation (which priced 4 ranks at 10 message times, not 3).
TEST(PlannerSimulator, PairwiseAlltoAllPacksItsConcurrentSends) {
  for (int p : {3, 4, 8}) {
    const double alpha = 1e-6, beta = 1.0 / 4e9;
    Planner planner(uniformHost(p, alpha, beta, 1.0 / 8e9, 0));
    const double n = 64.0 * 1024 * 1024;
    const Estimate e = planner.estimate(Collective::kAlltoAll, n, "pairwise");
    ASSERT_TRUE(e.error.empty()) << e.error;
    const double wire = (p - 1.0) / p * n * beta;
    EXPECT_GE(e.seconds, wire) << "p=" << p;
    // The local block's copy and one message latency on top of the transfers, at most.
    EXPECT_LE(e.seconds, wire + alpha + n / p * 2 * beta + 1e-9) << "p=" << p;
    EXPECT_NEAR(e.critical.total(), e.seconds, e.seconds * 1e-9);
  }
}

TEST(PlannerSimulator, PipeliningBeatsTheUnchunkedRing) {
  const double alpha = 5e-6, beta = 1.0 / 2e9, gamma = 1.0 / 4e9;
  const double n = 64.0 * 1024 * 1024;
  Planner whole(uniformHost(4, alpha, beta, gamma, 0));
  Planner chunked(uniformHost(4, alpha, beta, gamma, 512 * 1024));
  const double t0 = whole.estimate(Collective::kAllReduce, n, "ring").seconds;
  const double t1 = chunked.estimate(Collective::kAllReduce, n, "ring").seconds;
  EXPECT_LT(t1, t0);  // reductions hide behind transfers
  // ... but never below the wire time of 2(p-1)/p n bytes per rank.
  EXPECT_GT(t1, 1.5 * n * beta);
  EXPECT_LT(t1, 1.5 * n * beta * 1.1);
}

TEST(PlannerSimulator, ScaledSimulationAgreesWithTheFullOne) {
  // 32 MiB in 256 KiB chunks is 128 chunks: above the direct-simulation limit for 2 ranks (64), so the planner
  // extrapolates from 32 and 64 chunks. Compare with a full simulation of the real chunking.
  const double alpha = 10e-6, beta = 1.0 / 3e9, gamma = 1.0 / 6e9;
  PlannerConfig c = uniformHost(2, alpha, beta, gamma, 256 * 1024);
  Planner planner(c);
  const double n = 32.0 * 1024 * 1024;
  const double scaled = planner.estimate(Collective::kAllReduce, n, "ring").seconds;
  LinkTable links(*c.job, c.intra, c.params);
  BuildOptions bo = planner.buildOptions();
  std::vector<Schedule> s;
  const CollArgs args = argsForBytes(Collective::kAllReduce, n, 2);
  for (int r = 0; r < 2; ++r) s.push_back(buildRingAllReduce(args, r, 2, bo));
  const double full = simulate(s, links).seconds;
  EXPECT_NEAR(scaled, full, full * 0.02);
}

TEST(PlannerSimulator, SharedNicMakesNodeAlternatingRingSlower) {
  // cpu-2node-1g: 2 nodes x 2 ranks, one 1 Gb/s NIC per node. Node-contiguous ring 0,1,2,3 crosses the network
  // twice (one stream per NIC); node-alternating 0,2,1,3 crosses it four times (two streams share each NIC).
  const topo::JobTopology job = buildCluster(presetSpec("cpu-2node-1g"), "c");
  auto timeWith = [&](std::vector<int> order) {
    PlannerConfig c;
    c.job = std::make_shared<const topo::JobTopology>(job);
    c.ringOrder = std::move(order);
    return Planner(c).estimate(Collective::kAllReduce, 64e6, "ring");
  };
  const Estimate contiguous = timeWith({0, 1, 2, 3});
  const Estimate alternating = timeWith({0, 2, 1, 3});
  EXPECT_GT(alternating.seconds, 1.8 * contiguous.seconds);
  EXPECT_NE(alternating.busiestPort.find("nic0"), std::string::npos);
  EXPECT_EQ(alternating.busiestUsers, 2);
  EXPECT_GT(alternating.busiestUtilization, 0.9);
  // The contiguous ring is what the planner uses by default.
  PlannerConfig c;
  c.job = std::make_shared<const topo::JobTopology>(job);
  EXPECT_EQ(Planner(c).buildOptions().ringOrder, (std::vector<int>{0, 1, 2, 3}));
}

TEST(PlannerSimulator, UnmatchedReceiveIsReported) {
  PlannerConfig c = uniformHost(2, 1e-6, 1e-9, 1e-10, 0);
  LinkTable links(*c.job, c.intra, c.params);
  std::vector<Schedule> s(2);
  ScheduleBuilder b0("broken");
  b0.recv(1, outputSpan(0, 8));
  s[0] = b0.take();
  const SimResult r = simulate(s, links);
  EXPECT_FALSE(r.error.empty());
}

TEST(PlannerSimulator, CompressedAllReduceCountsCodecWork) {
  const topo::JobTopology job = buildCluster(presetSpec("cpu-2node-1g"), "c");
  PlannerConfig c;
  c.job = std::make_shared<const topo::JobTopology>(job);
  Planner planner(c);
  const double n = 64e6;
  const Estimate plain = planner.estimate(Collective::kAllReduce, n, "ring");
  const Estimate sign = planner.estimateCompressedForm(Collective::kAllReduce, n, "sign", false);
  ASSERT_TRUE(sign.error.empty()) << sign.error;
  EXPECT_EQ(sign.algorithm, "compressed_2phase");
  EXPECT_GT(sign.critical.codec, 0);
  // 32x less data on a 1 Gb/s network: much faster, even paying for encode and decode.
  EXPECT_LT(sign.seconds, plain.seconds / 3);
}

// Two CPU nodes of two ranks on 1 Gb/s: compressing only between the nodes halves the network bytes, which the
// uncompressed reduce-scatter and allgather over shared memory more than pay for; with one rank per node, or on
// one node, there is only the flat form.
TEST(PlannerSimulator, CompressedAllReducePricesTheHierarchicalForm) {
  ClusterSpec spec;  // 2 nodes x 2 ranks, shared memory inside, 1 Gb/s Ethernet between
  PlannerConfig c;
  c.job = std::make_shared<const topo::JobTopology>(buildCluster(spec, "c"));
  Planner planner(c);
  const double n = 64e6;
  const std::vector<Estimate> forms = planner.rankCompressed(Collective::kAllReduce, n, "bf16");
  ASSERT_EQ(forms.size(), 2u);
  EXPECT_EQ(forms[0].algorithm, "compressed_hier");
  EXPECT_EQ(forms[1].algorithm, "compressed_2phase");
  EXPECT_LT(forms[0].seconds, 0.75 * forms[1].seconds);
  EXPECT_EQ(planner.estimateCompressed(Collective::kAllReduce, n, "bf16").algorithm, "compressed_hier");
  const Estimate flat = planner.estimateCompressedForm(Collective::kAllReduce, n, "bf16", false);
  EXPECT_EQ(flat.algorithm, "compressed_2phase");
  EXPECT_DOUBLE_EQ(flat.seconds, forms[1].seconds);
  // Top-K has no hierarchical form; neither do the other collectives.
  EXPECT_EQ(planner.rankCompressed(Collective::kAllReduce, n, "topk:0.01").size(), 1u);
  EXPECT_EQ(planner.rankCompressed(Collective::kAllGather, n, "bf16").size(), 1u);
  EXPECT_FALSE(planner.estimateCompressedForm(Collective::kAllReduce, n, "topk:0.01", true).error.empty());

  spec.ranksPerNode = 1;
  PlannerConfig one;
  one.job = std::make_shared<const topo::JobTopology>(buildCluster(spec, "c1"));
  const std::vector<Estimate> single = Planner(one).rankCompressed(Collective::kAllReduce, n, "bf16");
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].algorithm, "compressed_2phase");
}

}  // namespace
}  // namespace tern::planner
