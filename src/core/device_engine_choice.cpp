#include "core/device_engine_choice.hpp"

#include <algorithm>
#include <cmath>

#include "planner/planner.hpp"
#include "topo/paths.hpp"

namespace tern {

namespace {

// deviceHostCopySeconds with the job's paths computed once (a host's all-pairs table is the costly part).
double copySeconds(const topo::JobTopology& job, const topo::JobPaths& paths, int rank, double bytes) {
  const topo::RankPlacement& p = job.ranks.at(static_cast<size_t>(rank));
  double gbs = kDefaultHostCopyGBs, latency = 0;
  if (p.gpu >= 0) {
    const topo::HostTopology& host = job.hosts[static_cast<size_t>(p.host)];
    double best = 0;
    for (int numa : host.nodesOfType(topo::NodeType::kNuma)) {
      const topo::Path& path = paths.host(p.host).get(p.gpu, numa);
      if (path.type == topo::PathType::kDis || !(path.bandwidth > best)) continue;
      best = path.bandwidth;
      latency = path.latencyUs * 1e-6;
    }
    if (best > 0 && std::isfinite(best)) gbs = best;
  }
  return latency + bytes / (gbs * 1e9);
}

}  // namespace

double deviceHostCopySeconds(const topo::JobTopology& job, int rank, double bytes) {
  return copySeconds(job, topo::JobPaths(job), rank, bytes);
}

std::vector<DeviceEngineEstimate> rankDeviceEngines(const CollArgs& args, int nranks, const topo::JobTopology& job,
                                                    const planner::Planner* device, const std::string& hostAlgorithm,
                                                    double hostSeconds) {
  DeviceEngineEstimate nccl{"nccl", "", -1};
  if (device != nullptr && args.coll != Collective::kAlltoAllv && args.coll != Collective::kPointToPoint) {
    const double bytes = planner::bytesOfArgs(args, nranks);
    const std::vector<planner::Estimate> ranked = device->rank(args.coll, bytes, args.dtype);
    if (!ranked.empty() && ranked.front().error.empty() && ranked.front().seconds >= 0) {
      nccl.algorithm = ranked.front().algorithm;
      nccl.seconds = ranked.front().seconds + kNcclLaunchSeconds;
    }
  }
  DeviceEngineEstimate staged{"staged", hostAlgorithm, -1};
  if (hostSeconds > 0) {
    // The slowest rank's copies: every rank waits for the collective, which waits for the last input.
    const double in = static_cast<double>(inputBytes(args, nranks));
    const double out = static_cast<double>(outputBytes(args, nranks));
    const topo::JobPaths paths(job);
    double copies = 0;
    for (int r = 0; r < nranks && r < static_cast<int>(job.ranks.size()); ++r) {
      copies = std::max(copies, copySeconds(job, paths, r, in) + copySeconds(job, paths, r, out));
    }
    staged.seconds = hostSeconds + copies + kStagedSyncSeconds;
  }
  std::vector<DeviceEngineEstimate> ranked = {nccl, staged};
  std::stable_sort(ranked.begin(), ranked.end(), [](const DeviceEngineEstimate& a, const DeviceEngineEstimate& b) {
    if ((a.seconds >= 0) != (b.seconds >= 0)) return a.seconds >= 0;
    return a.seconds >= 0 && a.seconds < b.seconds;
  });
  return ranked;
}

}  // namespace tern
