#include "planner/ring_order.hpp"

#include <map>

#include "topo/paths.hpp"

namespace tern::planner {

std::vector<int> hostOfRanks(const topo::JobTopology& job) {
  std::map<int, int> index;
  std::vector<int> out;
  for (const topo::RankPlacement& r : job.ranks) {
    auto it = index.emplace(r.host, static_cast<int>(index.size())).first;
    out.push_back(it->second);
  }
  return out;
}

std::vector<int> ringOrderFromHostOf(const std::vector<int>& hostOf, int nranks) {
  std::vector<int> order;
  if (hostOf.empty()) {
    for (int r = 0; r < nranks; ++r) order.push_back(r);
    return order;
  }
  std::map<int, int> first;  // host -> lowest rank
  for (int r = 0; r < static_cast<int>(hostOf.size()); ++r) first.emplace(hostOf[r], r);
  std::multimap<int, int> hosts;  // lowest rank -> host
  for (auto [h, r] : first) hosts.emplace(r, h);
  for (auto [low, h] : hosts) {
    for (int r = 0; r < static_cast<int>(hostOf.size()); ++r) {
      if (hostOf[r] == h) order.push_back(r);
    }
  }
  return order;
}

std::vector<int> topologyRingOrder(const topo::JobTopology& job) {
  const int n = static_cast<int>(job.ranks.size());
  std::vector<int> byHost = ringOrderFromHostOf(hostOfRanks(job), n);
  if (n <= 2) return byHost;
  topo::JobPaths paths(job);
  auto closer = [&](int from, int a, int b) {
    const topo::RankPath pa = paths.between(from, a), pb = paths.between(from, b);
    if (pa.type != pb.type) return pa.type < pb.type;
    if (pa.bandwidth != pb.bandwidth) return pa.bandwidth > pb.bandwidth;
    if (pa.latencyUs != pb.latencyUs) return pa.latencyUs < pb.latencyUs;
    return a < b;
  };
  std::vector<int> order;
  size_t i = 0;
  while (i < byHost.size()) {
    // One host's ranks: byHost[i, j).
    size_t j = i;
    while (j < byHost.size() && job.ranks[byHost[j]].host == job.ranks[byHost[i]].host) ++j;
    std::vector<int> left(byHost.begin() + static_cast<long>(i) + 1, byHost.begin() + static_cast<long>(j));
    int cur = byHost[i];
    order.push_back(cur);
    while (!left.empty()) {
      size_t best = 0;
      for (size_t k = 1; k < left.size(); ++k) {
        if (closer(cur, left[k], left[best])) best = k;
      }
      cur = left[best];
      order.push_back(cur);
      left.erase(left.begin() + static_cast<long>(best));
    }
    i = j;
  }
  return order;
}

}  // namespace tern::planner
