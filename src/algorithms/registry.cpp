// The algorithm table. Names are what TERN_ALGO and tools use; descriptions are printed by tern-calc and the perf
// binaries, one line each. Order within a collective is the fallback preference when nothing else decides.
#include "algorithms/registry.hpp"

#include <array>

namespace tern {

namespace {

constexpr std::array kAlgorithms = {
    AlgorithmInfo{"ring", Collective::kAllReduce,
                  "ring reduce-scatter + all-gather, chunked and pipelined; bandwidth-optimal, 2(n-1) hops",
                  buildRingAllReduce},
    AlgorithmInfo{"tree", Collective::kAllReduce,
                  "binary tree reduce then broadcast, chunked and pipelined; log(n) hops", buildTreeAllReduce},
    AlgorithmInfo{"dbtree", Collective::kAllReduce,
                  "double binary tree (NCCL): two complementary pipelined trees, each carrying half the data",
                  buildDoubleTreeAllReduce},
    AlgorithmInfo{"rd", Collective::kAllReduce,
                  "recursive doubling, whole buffer per step; latency-optimal for small messages",
                  buildRecursiveDoublingAllReduce},
    AlgorithmInfo{"rhd", Collective::kAllReduce,
                  "Rabenseifner: recursive halving reduce-scatter + doubling all-gather; 2 log(n) hops",
                  buildRabenseifnerAllReduce},
    AlgorithmInfo{"hier", Collective::kAllReduce,
                  "hierarchical: intra-node reduce-scatter, inter-node ring allreduce per slice, intra-node all-gather",
                  buildHierAllReduce},
    AlgorithmInfo{"ring", Collective::kAllGather, "ring, chunked and pipelined; bandwidth-optimal, n-1 hops",
                  buildRingAllGather},
    AlgorithmInfo{"rd", Collective::kAllGather, "recursive doubling (non-powers of two folded in); log(n) hops",
                  buildRecursiveDoublingAllGather},
    AlgorithmInfo{"bruck", Collective::kAllGather, "Bruck: ceil(log2 n) steps for any n, no final rotation",
                  buildBruckAllGather},
    AlgorithmInfo{"hier", Collective::kAllGather,
                  "hierarchical: inter-node ring all-gather per local rank, then intra-node ring all-gather",
                  buildHierAllGather},
    AlgorithmInfo{"ring", Collective::kReduceScatter, "ring, chunked and pipelined; bandwidth-optimal, n-1 hops",
                  buildRingReduceScatter},
    AlgorithmInfo{"rh", Collective::kReduceScatter, "recursive halving (non-powers of two folded in); log(n) hops",
                  buildRecursiveHalvingReduceScatter},
    AlgorithmInfo{"hier", Collective::kReduceScatter,
                  "hierarchical: intra-node ring reduce-scatter, then inter-node ring reduce-scatter",
                  buildHierReduceScatter},
    AlgorithmInfo{"chain", Collective::kBroadcast, "pipelined chain from the root in ring order; large messages",
                  buildChainBroadcast},
    AlgorithmInfo{"binomial", Collective::kBroadcast, "binomial tree, chunked; log(n) hops, small messages",
                  buildBinomialBroadcast},
    AlgorithmInfo{"scatter_allgather", Collective::kBroadcast,
                  "van de Geijn: binomial scatter + ring all-gather; large messages, many ranks",
                  buildScatterAllGatherBroadcast},
    AlgorithmInfo{"chain", Collective::kReduce, "pipelined chain towards the root in ring order; large messages",
                  buildChainReduce},
    AlgorithmInfo{"binomial", Collective::kReduce, "binomial tree, chunked; log(n) hops, small messages",
                  buildBinomialReduce},
    AlgorithmInfo{"pairwise", Collective::kAlltoAll,
                  "pairwise exchange, one partner per round; in place via bounded staging", buildPairwiseAlltoAll},
    AlgorithmInfo{"bruck", Collective::kAlltoAll, "Bruck: ceil(log2 n) packed exchanges; small blocks",
                  buildBruckAlltoAll},
    AlgorithmInfo{"pairwise", Collective::kAlltoAllv, "pairwise exchange with per-peer counts and displacements",
                  buildPairwiseAlltoAllv},
    AlgorithmInfo{"dissemination", Collective::kBarrier, "dissemination: ceil(log2 n) rounds of zero-byte signals",
                  buildDisseminationBarrier},
    AlgorithmInfo{"direct", Collective::kPointToPoint, "all sends and receives of the group posted at once",
                  buildDirectPointToPoint},
};

}  // namespace

std::span<const AlgorithmInfo> algorithms() { return {kAlgorithms.data(), kAlgorithms.size()}; }

const AlgorithmInfo* findAlgorithm(Collective c, std::string_view name) {
  for (const AlgorithmInfo& a : kAlgorithms) {
    if (a.collective == c && name == a.name) return &a;
  }
  return nullptr;
}

}  // namespace tern
