// The closed forms against hand-computed cases (Thakur, Rabenseifner & Gropp), one per algorithm.
#include <gtest/gtest.h>

#include "planner/formulas.hpp"

namespace tern::planner {
namespace {

// a = 1 us, b = 1 ns/B (1 GB/s), g = 0.5 ns/B, n = 1 MB (1e6 B).
FormulaInputs in(int p) {
  FormulaInputs f;
  f.p = p;
  f.n = 1e6;
  f.alpha = 1e-6;
  f.beta = 1e-9;
  f.gamma = 0.5e-9;
  return f;
}

double t(Collective c, const char* algo, const FormulaInputs& f) {
  auto r = closedForm(c, algo, f);
  EXPECT_TRUE(r.has_value()) << algo;
  return r ? r->seconds : -1;
}

TEST(CalcFormulas, AllReduce) {
  // ring, p = 4: 2*3 us + 2*3/4 * 1 ms + 3/4 * 0.5 ms = 6 us + 1.5 ms + 0.375 ms.
  EXPECT_NEAR(t(Collective::kAllReduce, "ring", in(4)), 6e-6 + 1.5e-3 + 0.375e-3, 1e-12);
  // Rabenseifner, p = 8: 2*3 us + 2*7/8 ms + 7/8 * 0.5 ms.
  EXPECT_NEAR(t(Collective::kAllReduce, "rhd", in(8)), 6e-6 + 1.75e-3 + 0.4375e-3, 1e-12);
  // recursive doubling, p = 8: 3 (1 us + 1 ms + 0.5 ms).
  EXPECT_NEAR(t(Collective::kAllReduce, "rd", in(8)), 3 * (1e-6 + 1e-3 + 0.5e-3), 1e-12);
  // recursive doubling, p = 6: 2 rounds on the 4 folded ranks + the fold in and out (2 (a + n b) + n g).
  EXPECT_NEAR(t(Collective::kAllReduce, "rd", in(6)), 2 * (1e-6 + 1.5e-3) + 2 * (1e-6 + 1e-3) + 0.5e-3, 1e-12);
  // tree, p = 4 (depth 2): 2*2 (1 us + 2 ms) + 2*2*0.5 ms.
  EXPECT_NEAR(t(Collective::kAllReduce, "tree", in(4)), 4 * (1e-6 + 2e-3) + 2e-3, 1e-12);
  // double binary tree, p = 4: 2*2 us + 2 ms + 0.5 ms.
  EXPECT_NEAR(t(Collective::kAllReduce, "dbtree", in(4)), 4e-6 + 2e-3 + 0.5e-3, 1e-12);
  // hierarchical: 2 nodes x 2 ranks; intra a 1 us / 1 GB/s, network a' 10 us / b' 4 ns/B, 2 ranks per NIC.
  FormulaInputs h = in(4);
  h.nodes = 2;
  h.perNode = 2;
  h.alphaNet = 10e-6;
  h.betaNet = 4e-9;
  h.nicShare = 2;
  // intra: 2*1 us + 2*1/2 ms + 1/2 * 0.5 ms; inter: 2*1*10 us + 2*1/2*(0.5e6 B)*4 ns*2 + 1/2 * 0.5e6 * 0.5 ns.
  EXPECT_NEAR(t(Collective::kAllReduce, "hier", h), (2e-6 + 1e-3 + 0.25e-3) + (20e-6 + 4e-3 + 0.125e-3), 1e-12);
}

TEST(CalcFormulas, OtherCollectives) {
  const FormulaInputs f = in(8);
  EXPECT_NEAR(t(Collective::kAllGather, "ring", f), 7e-6 + 0.875e-3, 1e-12);
  EXPECT_NEAR(t(Collective::kAllGather, "rd", f), 3e-6 + 0.875e-3, 1e-12);
  EXPECT_NEAR(t(Collective::kAllGather, "bruck", f), 3e-6 + 0.875e-3, 1e-12);
  EXPECT_NEAR(t(Collective::kReduceScatter, "ring", f), 7e-6 + 0.875e-3 * 1.5, 1e-12);
  EXPECT_NEAR(t(Collective::kReduceScatter, "rh", f), 3e-6 + 0.875e-3 * 1.5, 1e-12);
  EXPECT_NEAR(t(Collective::kBroadcast, "binomial", f), 3 * (1e-6 + 1e-3), 1e-12);
  EXPECT_NEAR(t(Collective::kBroadcast, "chain", f), 7 * (1e-6 + 1e-3), 1e-12);
  EXPECT_NEAR(t(Collective::kBroadcast, "scatter_allgather", f), (3 + 7) * 1e-6 + 2 * 0.875e-3, 1e-12);
  EXPECT_NEAR(t(Collective::kReduce, "binomial", f), 3 * (1e-6 + 1.5e-3), 1e-12);
  EXPECT_NEAR(t(Collective::kReduce, "chain", f), 7 * (1e-6 + 1.5e-3), 1e-12);
  EXPECT_NEAR(t(Collective::kAlltoAll, "pairwise", f), 7e-6 + 0.875e-3, 1e-12);
  EXPECT_NEAR(t(Collective::kAlltoAll, "bruck", f), 3e-6 + 0.5e6 * 3 * 1e-9, 1e-12);
  EXPECT_NEAR(t(Collective::kBarrier, "dissemination", f), 3e-6, 1e-12);
  EXPECT_FALSE(closedForm(Collective::kAllReduce, "nope", f).has_value());
  EXPECT_EQ(closedForm(Collective::kAllReduce, "ring", in(1))->seconds, 0);
  EXPECT_EQ(ceilLog2(1), 0);
  EXPECT_EQ(ceilLog2(5), 3);
  EXPECT_EQ(ceilLog2(8), 3);
}

}  // namespace
}  // namespace tern::planner
