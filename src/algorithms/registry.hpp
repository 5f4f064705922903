// The catalogue: every algorithm tern runs, one row each, with its name, collective, family, description,
// applicability and cost. TERN_ALGO, ternQueryAlgorithm, the planner, tern-calc and the tests' algorithm sweeps
// all read this one table.
//
// Families:
//  - schedule-built (src/algorithms/*.cpp): a Schedule builder; the planner prices it by simulating the schedule;
//    runs over any transport;
//  - shared-memory (src/algorithms/shm/): every rank reads its peers' buffers in place, when every rank of the
//    communicator is on one host with the shm transport; applies() and cost() answer from the arguments, the
//    buffers decide the rest at run time (algorithms/shm/shm_catalogue.hpp);
//  - compressed (src/algorithms/compressed.cpp): schedules with encode/decode steps, chosen by TERN_COMPRESS and a
//    codec rather than by TERN_ALGO.
// Order within a collective and family is the fallback preference when nothing else decides.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "exec/collective.hpp"
#include "exec/schedule.hpp"

namespace tern {

namespace shm {
struct ShmAlgorithmCost;
}  // namespace shm

using ScheduleBuilderFn = Schedule (*)(const CollArgs& args, int rank, int nranks, const BuildOptions& options);
// Whether the arguments admit a shared-memory algorithm on nranks ranks of one host; *why says why not.
using AppliesFn = bool (*)(const CollArgs& args, int nranks, std::string* why);
// Predicted seconds of a shared-memory algorithm for args on nranks ranks of one host.
using CostFn = double (*)(const CollArgs& args, int nranks, const shm::ShmAlgorithmCost& params);

enum class AlgorithmFamily { kSchedule, kSharedMemory, kCompressed };
const char* algorithmFamilyName(AlgorithmFamily f);

struct AlgorithmInfo {
  const char* name;
  Collective collective;
  const char* description;
  ScheduleBuilderFn build;  // schedule-built and compressed entries; nullptr for shared-memory ones
  AlgorithmFamily family = AlgorithmFamily::kSchedule;
  AppliesFn applies = nullptr;  // shared-memory entries (schedule-built ones build for any rank count)
  CostFn cost = nullptr;        // shared-memory entries (the planner simulates the others)
};

// Every entry, schedule-built ones first.
std::span<const AlgorithmInfo> catalogue();
// The schedule-built entries (those with a builder that TERN_ALGO and the planner's simulation choose among).
std::span<const AlgorithmInfo> algorithms();
// A schedule-built entry by name (nullptr if none).
const AlgorithmInfo* findAlgorithm(Collective c, std::string_view name);
// An entry of any family by name (nullptr if none).
const AlgorithmInfo* findEntry(Collective c, std::string_view name);

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
