#include "core/network_learning.hpp"

#include "base/dtype.hpp"

namespace tern {

bool NetworkLearning::wants(const CollArgs& args, bool severalHosts) const {
  if (calls_ <= 0 || finished_ || !severalHosts) return false;
  if (args.coll == Collective::kPointToPoint || args.coll == Collective::kAlltoAllv ||
      args.coll == Collective::kBarrier || args.coll == Collective::kCount) {
    return false;  // not priced by the model by size alone
  }
  return static_cast<double>(args.count) * static_cast<double>(dataTypeSize(args.dtype)) >= minBytes_;
}

bool NetworkLearning::record(const CollArgs& args, const std::string& algorithm, double seconds) {
  if (finished_) return false;
  planner::TimedCall call;
  call.collective = args.coll;
  call.algorithm = algorithm;
  call.dtype = args.dtype;
  call.bytes = static_cast<double>(args.count) * static_cast<double>(dataTypeSize(args.dtype));
  call.seconds = seconds;
  recorded_.push_back(call);
  times_.push_back(seconds);
  return static_cast<int>(recorded_.size()) >= calls_;
}

std::optional<planner::LearnedNetwork> NetworkLearning::learn(const planner::PlannerConfig& config,
                                                              const std::vector<double>& agreedTimes) {
  finished_ = true;
  if (agreedTimes.size() != recorded_.size()) return std::nullopt;
  for (size_t i = 0; i < recorded_.size(); ++i) recorded_[i].seconds = agreedTimes[i];
  return planner::learnNetwork(config, recorded_);
}

}  // namespace tern
