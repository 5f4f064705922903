#include "planner/training.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace tern::planner {

double gradientBytes(const TrainingInputs& in) { return in.params * in.gradBytesPerElement; }

StepTime stepFor(double comm, const TrainingInputs& in, int ranks) {
  StepTime s;
  s.commSeconds = comm;
  s.exposedSeconds = comm - std::min(in.overlap * comm, in.computeSeconds);
  s.stepSeconds = in.computeSeconds + s.exposedSeconds;
  s.commFraction = s.stepSeconds > 0 ? s.exposedSeconds / s.stepSeconds : 0;
  s.efficiency = s.stepSeconds > 0 ? in.computeSeconds / s.stepSeconds : 1;
  s.speedup = ranks * s.efficiency;
  return s;
}

StepTime stepTime(const Planner& planner, const TrainingInputs& in) {
  const double bytes = gradientBytes(in);
  const ternDataType_t dtype = in.gradBytesPerElement == 2 ? ternFloat16 : ternFloat32;
  Estimate e;
  if (planner.nranks() == 1) {
    e.algorithm = "none";
  } else if (!in.algorithm.empty()) {
    e = planner.estimate(Collective::kAllReduce, bytes, in.algorithm, dtype);
    if (!e.error.empty()) throwError(ternInvalidArgument, "%s", e.error.c_str());
  } else {
    std::vector<Estimate> ranked = planner.rank(Collective::kAllReduce, bytes, dtype);
    if (ranked.empty() || !ranked.front().error.empty()) throwError(ternInvalidArgument, "no allreduce applies");
    e = ranked.front();
  }
  StepTime s = stepFor(e.seconds, in, planner.nranks());
  s.algorithm = e.algorithm;
  s.estimate = e;
  return s;
}

StepTime compressedStepTime(const Planner& planner, const TrainingInputs& in, const std::string& codecSpec) {
  if (planner.nranks() == 1) return stepFor(0, in, 1);
  const Estimate e = planner.estimateCompressed(Collective::kAllReduce, in.params * 4.0, codecSpec);
  if (!e.error.empty()) throwError(ternInvalidArgument, "%s", e.error.c_str());
  StepTime s = stepFor(e.seconds, in, planner.nranks());
  s.algorithm = e.algorithm;
  s.estimate = e;
  return s;
}

topo::JobTopology firstHosts(const topo::JobTopology& job, int hosts) {
  topo::JobTopology out;
  out.name = job.name;
  out.description = job.description;
  out.network = job.network;
  hosts = std::clamp(hosts, 1, static_cast<int>(job.hosts.size()));
  out.hosts.assign(job.hosts.begin(), job.hosts.begin() + hosts);
  for (const topo::RankPlacement& r : job.ranks) {
    if (r.host < hosts) out.ranks.push_back(r);
  }
  return out;
}

}  // namespace tern::planner
