// The worked case of REFERENCE.md: ResNet-50 (25.6M fp32 parameters = 102.4 MB), 2 nodes x 2 GPUs, RoCE 25 Gb/s,
// 220 ms of compute per step.
#include <gtest/gtest.h>

#include "planner/cluster_spec.hpp"
#include "planner/training.hpp"

namespace tern::planner {
namespace {

TrainingInputs resnet50() {
  TrainingInputs in;
  in.params = 25.6e6;
  in.gradBytesPerElement = 4;
  in.computeSeconds = 0.220;
  return in;
}

Planner plannerFor(const char* preset, int nodes = 0) {
  ClusterSpec s = presetSpec(preset);
  if (nodes > 0) s.nodes = nodes;
  PlannerConfig c;
  c.job = std::make_shared<const topo::JobTopology>(buildCluster(s, preset));
  return Planner(c);
}

TEST(CalcTraining, NaiveFigures) {
  const TrainingInputs in = resnet50();
  EXPECT_DOUBLE_EQ(gradientBytes(in), 102.4e6);
  const StepTime at25 = stepFor(gradientBytes(in) / 3.125e9, in, 4);
  EXPECT_NEAR(at25.commSeconds, 0.0328, 0.0005);  // 33 ms
  EXPECT_NEAR(at25.commFraction, 0.13, 0.005);    // 13%
  const StepTime at10 = stepFor(gradientBytes(in) / 1.25e9, in, 4);
  EXPECT_NEAR(at10.commSeconds, 0.082, 0.0005);  // 82 ms
  EXPECT_NEAR(at10.commFraction, 0.27, 0.01);    // ~30% (82 of 302 ms)
  // Overlap hides part of it, never more than the compute.
  TrainingInputs overlapped = in;
  overlapped.overlap = 0.7;
  EXPECT_NEAR(stepFor(0.1, overlapped, 4).exposedSeconds, 0.03, 1e-12);
  EXPECT_NEAR(stepFor(1.0, overlapped, 4).exposedSeconds, 0.78, 1e-12);
}

TEST(CalcTraining, WorkedCaseModel) {
  const Planner p = plannerFor("roce25-2x2");
  const TrainingInputs in = resnet50();
  const StepTime st = stepTime(p, in);
  // Hierarchical: each NIC carries 2(N-1)/N x 102.4 MB = the naive 32.8 ms, plus the PCIe phases; a flat ring
  // carries 1.5 x that.
  EXPECT_EQ(st.algorithm, "hier");
  EXPECT_GT(st.commSeconds, 0.0328);
  EXPECT_LT(st.commSeconds, 0.045);
  const Estimate ring = p.estimate(Collective::kAllReduce, gradientBytes(in), "ring");
  EXPECT_GT(ring.seconds, 1.45 * 0.0328);
  // The reported 3.3x on 4 GPUs (0.84) came from another library; tern's two-node hierarchical allreduce pays the
  // link time once with no pipeline drain, so it may do better, but never better than compute / (compute + the
  // naive transfer), which is the bound for communication that does not overlap the compute.
  EXPECT_GT(st.efficiency, 0.84 - 0.03);
  EXPECT_LE(st.efficiency, 0.220 / (0.220 + 0.0328) + 1e-3);
  EXPECT_NEAR(st.speedup, 3.35, 0.15);
  // Slower network, more communication; one node needs no network at all.
  const StepTime slow = stepTime(plannerFor("roce10-2x2"), in);
  EXPECT_GT(slow.commFraction, 0.25);
  const StepTime one = stepTime(plannerFor("roce25-2x2", 1), in);
  EXPECT_LT(one.commSeconds, st.commSeconds);
  // Compression: sign sends 1/32 of the bytes.
  const StepTime sign = compressedStepTime(p, in, "sign");
  EXPECT_EQ(sign.algorithm, "compressed_2phase");
  EXPECT_GT(sign.estimate.critical.codec, 0);
}

TEST(CalcTraining, FirstHosts) {
  const topo::JobTopology job = buildCluster(presetSpec("roce25-2x2x4"), "r");
  const topo::JobTopology two = firstHosts(job, 2);
  EXPECT_EQ(two.hosts.size(), 2u);
  EXPECT_EQ(two.ranks.size(), 4u);
}

}  // namespace
}  // namespace tern::planner
