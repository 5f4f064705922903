// The catalogue. Names are what TERN_ALGO and tools use; descriptions are printed by tern-calc and the perf
// binaries, one line each. Schedule-built entries come first (algorithms() is that prefix); within a collective
// and family, order is the fallback preference when nothing else decides.
#include "algorithms/registry.hpp"

#include <array>

#include "algorithms/compressed.hpp"
#include "algorithms/shm/shm_catalogue.hpp"

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
    AlgorithmInfo{
        "hier", Collective::kAllReduce,
        "hierarchical: intra-node reduce-scatter, inter-node allreduce per slice (ring; two nodes: exchange), "
        "intra-node all-gather",
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

// The shared-memory algorithms (src/algorithms/shm), one entry per collective they have a form for.
constexpr const char* kShmSmall =
    "one phase through per-rank small areas: every rank folds or copies every rank's data";
constexpr const char* kShmPipelined =
    "chunked: each rank reduces its slice of a chunk, peers gather it; staged, or reading buffers in place";
constexpr const char* kShmCma =
    "one pass reading peers' ordinary buffers by CMA (process_vm_readv); ranks in separate processes";
constexpr const char* kShmCmaReduce =
    "one pass: each rank reads its slice of every peer's buffer by CMA, reduces it and writes it into the root's";
constexpr const char* kShmCmaReduceScatter =
    "one pass: each rank reads its block of every peer's input by CMA and reduces it into its output";
constexpr const char* kShmMapped =
    "one pass over every rank's buffers in place (threads of a process, or ternMemAlloc buffers mapped by peers)";

constexpr AlgorithmInfo shmEntry(const char* name, Collective c, const char* description, AppliesFn applies,
                                 CostFn cost) {
  return AlgorithmInfo{name, c, description, nullptr, AlgorithmFamily::kSharedMemory, applies, cost};
}

constexpr AlgorithmInfo compressedEntry(const char* name, Collective c, const char* description,
                                        ScheduleBuilderFn build) {
  return AlgorithmInfo{name, c, description, build, AlgorithmFamily::kCompressed};
}

constexpr std::array kOtherFamilies = {
    shmEntry("shm_small", Collective::kAllReduce, kShmSmall, shm::shmSmallApplies, shm::shmSmallCost),
    shmEntry("shm_pipelined", Collective::kAllReduce, kShmPipelined, shm::shmPipelinedApplies, shm::shmChunkedCost),
    shmEntry("shm_cma", Collective::kAllReduce, kShmCma, shm::shmCmaApplies, shm::shmChunkedCost),
    shmEntry("shm_mapped", Collective::kAllReduce, kShmMapped, shm::shmMappedApplies, shm::shmChunkedCost),
    shmEntry("shm_small", Collective::kAllGather, kShmSmall, shm::shmSmallApplies, shm::shmSmallCost),
    shmEntry("shm_pipelined", Collective::kAllGather, kShmPipelined, shm::shmPipelinedApplies, shm::shmChunkedCost),
    shmEntry("shm_cma", Collective::kAllGather, kShmCma, shm::shmCmaApplies, shm::shmChunkedCost),
    shmEntry("shm_small", Collective::kReduceScatter, kShmSmall, shm::shmSmallApplies, shm::shmSmallCost),
    shmEntry("shm_pipelined", Collective::kReduceScatter, kShmPipelined, shm::shmPipelinedApplies, shm::shmChunkedCost),
    shmEntry("shm_cma", Collective::kReduceScatter, kShmCmaReduceScatter, shm::shmCmaApplies, shm::shmChunkedCost),
    shmEntry("shm_small", Collective::kBroadcast, kShmSmall, shm::shmSmallApplies, shm::shmSmallCost),
    shmEntry("shm_pipelined", Collective::kBroadcast, kShmPipelined, shm::shmPipelinedApplies, shm::shmChunkedCost),
    shmEntry("shm_cma", Collective::kBroadcast, kShmCma, shm::shmCmaApplies, shm::shmChunkedCost),
    shmEntry("shm_small", Collective::kReduce, kShmSmall, shm::shmSmallApplies, shm::shmSmallCost),
    shmEntry("shm_pipelined", Collective::kReduce, kShmPipelined, shm::shmPipelinedApplies, shm::shmChunkedCost),
    shmEntry("shm_cma", Collective::kReduce, kShmCmaReduce, shm::shmCmaApplies, shm::shmChunkedCost),
    shmEntry("shm_small", Collective::kBarrier, "one flag round through the small areas", shm::shmSmallApplies,
             shm::shmSmallCost),
    // Compressed collectives (src/algorithms/compressed.cpp): TERN_COMPRESS and the codec choose among them.
    compressedEntry("compressed_2phase", Collective::kAllReduce,
                    "dense codec: encoded chunks all-to-all, summed by their owner, re-encoded and gathered",
                    buildCompressedTwoPhaseAllReduce),
    compressedEntry("compressed_hier", Collective::kAllReduce,
                    "dense codec on even nodes: uncompressed inside nodes, two-phase compressed between them",
                    buildCompressedHierAllReduce),
    compressedEntry("sparse_allgather", Collective::kAllReduce,
                    "Top-K: every rank's index/value pairs all-gathered and summed in rank order",
                    buildSparseAllGatherAllReduce),
    compressedEntry("compressed_allgather", Collective::kAllGather, "each rank's block encoded once and gathered",
                    buildCompressedAllGather),
    compressedEntry("compressed_reducescatter", Collective::kReduceScatter,
                    "phase one of the two-phase allreduce: encoded blocks to their owners, decoded and summed",
                    buildCompressedReduceScatter),
};

// All-to-all over shared memory (algorithms/shm/direct_alltoall.cpp), listed once DirectCollectives dispatches it.
constexpr const char* kShmAlltoAllSmall =
    "one pass: every rank's blocks for its peers inline in its staging slot, copied out by their receivers";
constexpr const char* kShmAlltoAllStaged = "blocks staged in rounds through the staging slots, one region per receiver";
constexpr const char* kShmAlltoAllCma =
    "one pass: every rank reads its blocks from the senders' buffers by CMA; ranks in separate processes";
constexpr const char* kShmAlltoAllMapped = "one pass: every rank reads its blocks in place (threads of a process)";
constexpr std::array kShmAlltoAll = {
    shmEntry("shm_small", Collective::kAlltoAll, kShmAlltoAllSmall, shm::shmSmallApplies, shm::shmSmallCost),
    shmEntry("shm_pipelined", Collective::kAlltoAll, kShmAlltoAllStaged, shm::shmPipelinedApplies, shm::shmChunkedCost),
    shmEntry("shm_cma", Collective::kAlltoAll, kShmAlltoAllCma, shm::shmCmaApplies, shm::shmChunkedCost),
    shmEntry("shm_mapped", Collective::kAlltoAll, kShmAlltoAllMapped, shm::shmMappedApplies, shm::shmChunkedCost),
    shmEntry("shm_small", Collective::kAlltoAllv, kShmAlltoAllSmall, shm::shmSmallApplies, shm::shmSmallCost),
    shmEntry("shm_pipelined", Collective::kAlltoAllv, kShmAlltoAllStaged, shm::shmPipelinedApplies,
             shm::shmChunkedCost),
    shmEntry("shm_cma", Collective::kAlltoAllv, kShmAlltoAllCma, shm::shmCmaApplies, shm::shmChunkedCost),
    shmEntry("shm_mapped", Collective::kAlltoAllv, kShmAlltoAllMapped, shm::shmMappedApplies, shm::shmChunkedCost),
};
constexpr size_t kShmAlltoAllListed = shm::kAlltoAllDispatched ? kShmAlltoAll.size() : 0;

constexpr auto kCatalogue = [] {
  std::array<AlgorithmInfo, kAlgorithms.size() + kOtherFamilies.size() + kShmAlltoAllListed> all{};
  size_t i = 0;
  for (const AlgorithmInfo& a : kAlgorithms) all[i++] = a;
  for (const AlgorithmInfo& a : kOtherFamilies) all[i++] = a;
  for (size_t k = 0; k < kShmAlltoAllListed; ++k) all[i++] = kShmAlltoAll[k];
  return all;
}();

// Families only: whether a builder is set is checked by the catalogue test at run time, because comparing a
// function's address with null is not a constant expression under the sanitizers' instrumentation.
constexpr bool scheduleEntriesFirst() {
  for (const AlgorithmInfo& a : kAlgorithms) {
    if (a.family != AlgorithmFamily::kSchedule) return false;
  }
  for (const AlgorithmInfo& a : kOtherFamilies) {
    if (a.family == AlgorithmFamily::kSchedule) return false;
  }
  return true;
}
static_assert(scheduleEntriesFirst(), "algorithms() is the schedule-built prefix of the catalogue");

}  // namespace

const char* algorithmFamilyName(AlgorithmFamily f) {
  switch (f) {
    case AlgorithmFamily::kSchedule:
      return "schedule";
    case AlgorithmFamily::kSharedMemory:
      return "shared-memory";
    case AlgorithmFamily::kCompressed:
      return "compressed";
  }
  return "?";
}

std::span<const AlgorithmInfo> catalogue() { return {kCatalogue.data(), kCatalogue.size()}; }

std::span<const AlgorithmInfo> algorithms() { return {kCatalogue.data(), kAlgorithms.size()}; }

const AlgorithmInfo* findAlgorithm(Collective c, std::string_view name) {
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.collective == c && name == a.name) return &a;
  }
  return nullptr;
}

const AlgorithmInfo* findEntry(Collective c, std::string_view name) {
  for (const AlgorithmInfo& a : kCatalogue) {
    if (a.collective == c && name == a.name) return &a;
  }
  return nullptr;
}

}  // namespace tern
