// A communicator's record of its first network-crossing calls, from which it learns what the network gives
// (planner/link_learner.hpp).
//
// Which calls count is decided from their arguments alone (uncompressed, a schedule algorithm, at least minBytes,
// on a job of several hosts), so every rank counts the same calls and reaches the last one at the same call. There
// the communicator agrees on the times (each call's minimum over the ranks: the last rank to arrive measured the
// collective itself, earlier ones also their wait for it), learns once, and prices every later call with the
// result; calls before it keep the start's parameters.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "exec/collective.hpp"
#include "planner/link_learner.hpp"

namespace tern {

class NetworkLearning {
 public:
  // calls: how many timed calls to learn from (0: never learn).
  NetworkLearning(int calls, double minBytes) : calls_(calls), minBytes_(minBytes) {}

  // Whether a call with these arguments, run by a schedule algorithm without compression, is to be timed.
  bool wants(const CollArgs& args, bool severalHosts) const;
  // Records a timed call; true when it was the last one needed (the caller then agrees and calls learn).
  bool record(const CollArgs& args, const std::string& algorithm, double seconds);
  // This rank's times, in call order, for the agreement.
  const std::vector<double>& times() const { return times_; }
  // Learns from the agreed times (one per recorded call) and stops recording. nullopt when nothing could be learned.
  std::optional<planner::LearnedNetwork> learn(const planner::PlannerConfig& config,
                                               const std::vector<double>& agreedTimes);
  bool finished() const { return finished_; }
  // Whether it learns at all (a number of calls to learn from was given).
  bool enabled() const { return calls_ > 0; }

 private:
  int calls_;
  double minBytes_;
  bool finished_ = false;
  std::vector<planner::TimedCall> recorded_;
  std::vector<double> times_;
};

}  // namespace tern
