// Learning the network's cost from the collectives a communicator has timed.
//
// Without a tune file or a topology file the model knows a network link only by its detected (or assumed) line
// rate, which says nothing about what the job really gets: a shaped or shared link, a slow switch, TCP's overheads.
// A communicator therefore times its first uncompressed calls that cross the network and refines the network
// class's alpha and beta from them, so that later decisions (which algorithm, whether TERN_COMPRESS pays) are priced
// on the link the job actually has.
//
// The fit uses the model's own breakdown of every call (planner/breakdown.hpp): along the critical path a call's
// predicted time is rest + L x alpha_net + B x beta_net, where L and B (messages and bytes on the network) come from
// the simulation and rest (shared-memory hops, reductions, copies) is kept as predicted. With the measured times
// that is a weighted linear least-squares problem in (alpha_net, beta_net), weighted by relative error; the path can
// change with the parameters, so it is re-simulated and solved again until the values settle. When the calls do not
// span enough sizes to tell latency from bandwidth apart, alpha keeps its current value and only beta is fitted.
//
// Every rank must decide alike, so the caller agrees on the times first (e.g. the minimum over ranks of each call's
// time: the last rank to arrive measured the collective itself, the others also their wait for it); the fit is
// deterministic, so identical inputs give identical parameters on every rank.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "exec/collective.hpp"
#include "planner/planner.hpp"

namespace tern::planner {

// One timed uncompressed call: what ran and how long it took (seconds, agreed over the ranks).
struct TimedCall {
  Collective collective = Collective::kAllReduce;
  std::string algorithm;
  ternDataType_t dtype = ternFloat32;
  double bytes = 0;
  double seconds = 0;
};

struct LearnedNetwork {
  LinkCalibration network;   // speedGbps -1: the figures apply as they are
  bool alphaFitted = false;  // false: alpha kept, only beta fitted (the calls' sizes were too alike)
  int callsUsed = 0;         // calls whose prediction has network terms
  double rmsError = 0;       // relative, of the refined predictions against the times
  int rounds = 0;
};

// The network class refined from the calls, starting from config's parameters. nullopt when the job has no network
// link, or no call put network bytes on its critical path, or the times leave no room for the network (every call
// at or below what the rest of its path costs).
std::optional<LearnedNetwork> learnNetwork(const PlannerConfig& config, const std::vector<TimedCall>& calls);

// config's parameters with the network class replaced by the learned one (the "network" entry, and any
// "network:<kind>" entries dropped, since the learned figure is what this job's network gives).
CostParams withLearnedNetwork(const CostParams& params, const LearnedNetwork& learned);

}  // namespace tern::planner
