// The table of algorithms: name, collective, description and builder. Selection (by cost model, or by name via
// TERN_ALGO) picks rows from it; tern-calc prints it.
#pragma once

#include <span>
#include <string_view>

#include "algorithms/collective.hpp"
#include "algorithms/schedule.hpp"

namespace tern {

using ScheduleBuilderFn = Schedule (*)(const CollArgs& args, int rank, int nranks, const BuildOptions& options);

struct AlgorithmInfo {
  const char* name;
  Collective collective;
  const char* description;
  ScheduleBuilderFn build;
};

std::span<const AlgorithmInfo> algorithms();
const AlgorithmInfo* findAlgorithm(Collective c, std::string_view name);

// Builders (one file each under src/algorithms/).
Schedule buildRingAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildRingAllGather(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildRingReduceScatter(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildChainBroadcast(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildChainReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildPairwiseAlltoAll(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildPairwiseAlltoAllv(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildDisseminationBarrier(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildTreeAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildDoubleTreeAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildRecursiveDoublingAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildRabenseifnerAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildHierAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildRecursiveDoublingAllGather(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildBruckAllGather(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildHierAllGather(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildRecursiveHalvingReduceScatter(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildHierReduceScatter(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildBinomialBroadcast(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildScatterAllGatherBroadcast(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildBinomialReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildBruckAlltoAll(const CollArgs&, int rank, int nranks, const BuildOptions&);
// Point-to-point groups (CollArgs::p2p): every send/receive posted at once; self-sends become copies.
Schedule buildDirectPointToPoint(const CollArgs&, int rank, int nranks, const BuildOptions&);

}  // namespace tern
