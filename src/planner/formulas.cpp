#include "planner/formulas.hpp"

namespace tern::planner {

int ceilLog2(int p) {
  int l = 0;
  while ((1 << l) < p) ++l;
  return l;
}

namespace {

int floorLog2(int p) {
  int l = 0;
  while ((2 << l) <= p) ++l;
  return l;
}

// Ranks that do not fit the largest power of two below p first fold into a partner and get the result back at the
// end (MPICH): one extra exchange of the whole buffer on each side.
double foldExtra(const FormulaInputs& in, bool reduces) {
  const int pof2 = 1 << floorLog2(in.p);
  if (pof2 == in.p) return 0;
  return 2 * (in.alpha + in.n * in.beta) + (reduces ? in.n * in.gamma : 0);
}

Formula allReduce(std::string_view algo, const FormulaInputs& in) {
  const double p = in.p, n = in.n, a = in.alpha, b = in.beta, g = in.gamma;
  const double lg = ceilLog2(in.p), lgf = floorLog2(in.p), f = (p - 1) / p;
  if (algo == "ring") return {2 * (p - 1) * a + 2 * f * n * b + f * n * g, "2(p-1)a + 2(p-1)/p n b + (p-1)/p n g"};
  if (algo == "rhd") {
    const double q = 1 << floorLog2(in.p), fq = (q - 1) / q;
    return {2 * lgf * a + 2 * fq * n * b + fq * n * g + foldExtra(in, true),
            "2 lg p a + 2(p-1)/p n b + (p-1)/p n g (+ 2(a + n b) + n g when p is not a power of two)"};
  }
  if (algo == "rd") {
    return {lgf * (a + n * b + n * g) + foldExtra(in, true),
            "lg p (a + n b + n g) (+ 2(a + n b) + n g when p is not a power of two)"};
  }
  if (algo == "tree") {
    // Unpipelined binary tree: each level of the reduction brings two children's buffers into one parent (one
    // receive port: 2 n b, two reductions: 2 n g), and the broadcast sends them back down.
    return {2 * lg * (a + 2 * n * b) + 2 * lg * n * g,
            "binary tree, unpipelined: 2 lg p (a + 2 n b) + 2 lg p n g (pipelined chunks approach 3 n b)"};
  }
  if (algo == "dbtree") {
    return {2 * lg * a + 2 * n * b + n * g,
            "double binary tree, pipelined limit: 2 lg p a + 2 n b + n g (each tree carries n/2)"};
  }
  if (algo == "hier") {
    const double gN = in.perNode, N = in.nodes, fi = (gN - 1) / gN, fe = (N - 1) / N;
    const double slice = n / gN;
    const double intra = 2 * (gN - 1) * a + 2 * fi * n * b + fi * n * g;
    const double inter = 2 * (N - 1) * in.alphaNet + 2 * fe * slice * in.betaNet * in.nicShare + fe * slice * g;
    return {intra + inter,
            "intra ring RS + AG: 2(g-1)a + 2(g-1)/g n b + (g-1)/g n g;  inter ring allreduce of n/g per rank, "
            "k ranks per NIC: 2(N-1)a' + 2(N-1)/N (n/g) k b' + (N-1)/N (n/g) g"};
  }
  return {-1, ""};
}

}  // namespace

std::optional<Formula> closedForm(Collective c, std::string_view algo, const FormulaInputs& in) {
  const double p = in.p, n = in.n, a = in.alpha, b = in.beta, g = in.gamma;
  const double lg = ceilLog2(in.p), f = (p - 1) / p;
  if (in.p <= 1) return Formula{0, "a single rank: nothing to send"};
  Formula out{-1, ""};
  switch (c) {
    case Collective::kAllReduce:
      out = allReduce(algo, in);
      break;
    case Collective::kAllGather:
      if (algo == "ring") out = {(p - 1) * a + f * n * b, "(p-1)a + (p-1)/p n b"};
      if (algo == "rd" || algo == "bruck") out = {lg * a + f * n * b, "lg p a + (p-1)/p n b"};
      if (algo == "hier") {
        const double gN = in.perNode, N = in.nodes;
        out = {(N - 1) * in.alphaNet + (N - 1) / N * n / gN * in.betaNet * in.nicShare * 1.0 + (gN - 1) * a +
                   (gN - 1) / gN * n * b,
               "inter ring per local rank: (N-1)a' + (N-1)/N (n/g) k b';  intra ring: (g-1)a + (g-1)/g n b"};
      }
      break;
    case Collective::kReduceScatter:
      if (algo == "ring") out = {(p - 1) * a + f * n * (b + g), "(p-1)a + (p-1)/p n (b + g)"};
      if (algo == "rh") out = {lg * a + f * n * (b + g), "lg p a + (p-1)/p n (b + g)"};
      if (algo == "hier") {
        const double gN = in.perNode, N = in.nodes;
        out = {(gN - 1) * a + (gN - 1) / gN * n * (b + g) + (N - 1) * in.alphaNet +
                   (N - 1) / N * n / gN * (in.betaNet * in.nicShare + g),
               "intra ring: (g-1)a + (g-1)/g n (b + g);  inter ring per local rank: (N-1)a' + (N-1)/N (n/g)(k b' + g)"};
      }
      break;
    case Collective::kBroadcast:
      if (algo == "binomial") out = {lg * (a + n * b), "lg p (a + n b)"};
      if (algo == "chain") out = {(p - 1) * (a + n * b), "unpipelined: (p-1)(a + n b); pipelined limit: n b"};
      if (algo == "scatter_allgather") {
        out = {(lg + p - 1) * a + 2 * f * n * b, "binomial scatter + ring allgather: (lg p + p-1)a + 2(p-1)/p n b"};
      }
      break;
    case Collective::kReduce:
      if (algo == "binomial") out = {lg * (a + n * b + n * g), "lg p (a + n b + n g)"};
      if (algo == "chain") {
        out = {(p - 1) * (a + n * b + n * g), "unpipelined: (p-1)(a + n b + n g); pipelined limit: n (b + g)"};
      }
      break;
    case Collective::kAlltoAll:
      if (algo == "pairwise") out = {(p - 1) * a + f * n * b, "(p-1)a + (p-1)/p n b"};
      if (algo == "bruck") out = {lg * a + n / 2 * lg * b, "lg p a + (n/2) lg p b"};
      break;
    case Collective::kBarrier:
      if (algo == "dissemination") out = {lg * a, "lg p a"};
      break;
    default:
      break;
  }
  if (out.seconds < 0) return std::nullopt;
  return out;
}

}  // namespace tern::planner
