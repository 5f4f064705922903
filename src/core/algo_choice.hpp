// Which algorithm runs a collective: the TERN_ALGO / config override first (NCCL syntax: "ring",
// "allreduce:rhd;allgather:ring", "^tree" to exclude; any schedule-built or shared-memory entry of the catalogue,
// algorithms/registry.hpp), then the cost model (src/planner): the cheapest candidate for (collective, size, ranks,
// topology), optionally against the shared-memory direct path.
//
// Every rank must choose alike, or their schedules never match. The choice is a pure function of the topology
// (identical on every rank), the cost parameters (TERN_TUNE_FILE: the same file everywhere), the override and the
// size bucket of the call, so it is.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algo_override.hpp"
#include "algorithms/registry.hpp"
#include "exec/collective.hpp"
#include "topo/topology.hpp"

namespace tern {

namespace planner {
class Planner;
}  // namespace planner

struct ChoiceContext {
  int nranks = 1;
  bool multiHost = false;
  int rank = 0;  // for log lines
  // The communicator's planner (makeCommPlanner). Without one a process-wide default is used, built from hostOf
  // (or, when multiHost is set without it, one host per rank) with the shm or loopback link class.
  std::shared_ptr<const planner::Planner> planner = nullptr;
  std::vector<int> hostOf = {};
};

// The intra-node direct path as a candidate: the shared-memory entry it would run (IntraNode::algorithmFor, ""
// when none applies) and its estimate (IntraNode::predictSeconds, from the entry's cost with the planner's
// CostParams::shmAlgorithms: seconds, negative when it does not apply).
struct DirectOption {
  std::string name;
  std::function<double(const CollArgs&)> predictSeconds;
};

struct Choice {
  const AlgorithmInfo* info = nullptr;  // the schedule algorithm; nullptr when the direct path runs the call
  std::string name;
  bool direct = false;
  bool forced = false;           // TERN_ALGO named it
  double predictedSeconds = -1;  // at the size bucket's representative size; -1 when not priced (forced)
};

// The full decision: override, cost model, and the direct path when given. A forced shared-memory entry is a
// direct choice; it throws ternInvalidUsage when the direct path is absent (ranks on several hosts, no shm
// transport) or would run another entry. Decisions are logged (TERN_DEBUG=INFO, subsystem TUNE) once per
// (collective, size bucket), with every candidate's predicted time.
Choice chooseWithDirect(const CollArgs& args, const ChoiceContext& ctx, const AlgoOverride& override,
                        const DirectOption& direct);

// Picks the schedule algorithm for args among the schedule-built entries (a forced shared-memory entry is ignored:
// this is the schedule that runs when the direct path does not).
const AlgorithmInfo& chooseAlgorithm(const CollArgs& args, const ChoiceContext& ctx, const AlgoOverride& override);

// The cost model's time for args with a registered algorithm (exact size; memoized); -1 when it has none.
double predictSeconds(const CollArgs& args, const ChoiceContext& ctx, const std::string& algorithm);

// The direct path's time for args: the calibration's "shm_direct" figure when the parameters (TERN_TUNE_FILE) have
// one, else the shared-memory entry's own cost (DirectOption::predictSeconds); negative when the direct path does
// not apply to args.
double directSeconds(const CollArgs& args, const ChoiceContext& ctx, const DirectOption& direct);

// The predicted time of a choice for the exact size of args (ternQueryAlgorithm's predictedUs); 0 when unknown.
double predictChoiceSeconds(const CollArgs& args, const ChoiceContext& ctx, const Choice& choice,
                            const DirectOption& direct);

// The planner for a communicator's host-memory calls. job: the assembled topology (topo/assemble.hpp) when there is
// one, every rank priced as a CPU rank (host buffers never touch a GPU); without it a job is made up from the host
// ids (one package and one Ethernet NIC of unknown speed per host, CPU ranks).
// shmTransport: same-host peers talk through shared memory (else TCP loopback). Parameters: processCostParams()
// (TERN_TUNE_FILE); chunk size: TERN_CHUNK_BYTES or the builders' default. Throws for a bad TERN_TUNE_FILE.
std::shared_ptr<const planner::Planner> makeCommPlanner(int nranks, const std::vector<std::string>& hostIds,
                                                        bool shmTransport,
                                                        std::shared_ptr<const topo::JobTopology> job = nullptr);
// The planner for a communicator's calls on device buffers: the job as assembled, GPU ranks over their own links
// (NVLink, PCIe, their NICs) and compute, same parameters and chunk size. nullptr when no rank drives a GPU.
std::shared_ptr<const planner::Planner> makeDevicePlanner(std::shared_ptr<const topo::JobTopology> job);

}  // namespace tern
