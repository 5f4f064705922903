#include "planner/link_table.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/error.hpp"
#include "topo/paths.hpp"

namespace tern::planner {

namespace {

// Line rate (GB/s) a NIC puts on the fabric: its own speed capped by the fabric's (as topo::JobPaths does).
double nicLineGBs(const topo::JobTopology& job, int host, int nic) {
  const topo::Network& net = job.network;
  double gbps = net.speedGbps > 0 ? net.speedGbps : topo::kUnknownNicSpeedGbps;
  if (nic >= 0 && job.hosts[host].nodes[nic].speedGbps > 0) gbps = job.hosts[host].nodes[nic].speedGbps;
  if (net.speedGbps > 0) gbps = std::min(gbps, net.speedGbps);
  return gbps / 8.0;
}

}  // namespace

LinkTable::LinkTable(const topo::JobTopology& job, IntraTransport intra, const CostParams& params)
    : n_(static_cast<int>(job.ranks.size())), params_(params) {
  if (n_ == 0) throwError(ternInvalidArgument, "cost model: the topology has no ranks");
  for (int r = 0; r < n_; ++r) {
    const int h = job.ranks[r].host;
    if (h < 0 || h >= static_cast<int>(job.hosts.size())) {
      throwError(ternInvalidArgument, "cost model: rank %d has no host", r);
    }
    host_.push_back(h);
    gpu_.push_back(job.ranks[r].gpu >= 0);
  }
  // Ports: four per rank, then two per NIC (or per host without a NIC node).
  for (int r = 0; r < n_; ++r) {
    for (const char* what : {"send", "recv", "network send", "network recv"}) {
      portNames_.push_back(format("rank %d %s", r, what));
      portUsers_.push_back(1);
    }
  }
  topo::JobPaths paths(job);
  std::map<std::pair<int, int>, int> nicPort;  // (host, nic node) -> egress port; ingress is +1
  auto nicPortOf = [&](int rank) {
    const int h = host_[rank];
    const int nic = paths.nicOf(rank);
    auto [it, fresh] = nicPort.emplace(std::pair{h, nic}, numPorts());
    if (fresh) {
      const topo::HostTopology& host = job.hosts[h];
      std::string nicName = nic >= 0 ? host.nodes[nic].id : "nic";
      if (nic >= 0 && !host.nodes[nic].name.empty()) nicName += " (" + host.nodes[nic].name + ")";
      portNames_.push_back(format("host %s %s egress", host.id.c_str(), nicName.c_str()));
      portNames_.push_back(format("host %s %s ingress", host.id.c_str(), nicName.c_str()));
      portUsers_.push_back(0);
      portUsers_.push_back(0);
    }
    return it->second;
  };
  std::set<std::pair<int, int>> counted;  // (rank, nic port) pairs already counted as users
  pairs_.resize(static_cast<size_t>(n_) * n_);
  const topo::NetKind kind = job.network.kind;
  for (int a = 0; a < n_; ++a) {
    for (int b = 0; b < n_; ++b) {
      PairLink& l = pairs_[static_cast<size_t>(a) * n_ + b];
      if (a == b) {
        l.cls = ModelLink::kShm;
        l.sendPort = 4 * a;
        l.recvPort = 4 * b + 1;
        continue;
      }
      const topo::RankPath rp = paths.between(a, b);
      if (host_[a] == host_[b]) {
        l.cls = intra == IntraTransport::kLoopback ? ModelLink::kLoopback : fromTopoClass(rp.linkClass);
        l.sendPort = 4 * a;
        l.recvPort = 4 * b + 1;
        if (const LinkCalibration* c = params_.find(l.cls)) {
          l.alpha = c->cost.alpha;
          l.beta = c->cost.beta;
          l.cache = c->cache;
        } else if (l.cls == ModelLink::kLoopback) {
          const LinkCost d = defaultLinkCost(l.cls);
          l.alpha = d.alpha;
          l.beta = d.beta;
        } else {
          l.alpha = rp.latencyUs * 1e-6;
          l.beta = std::isfinite(rp.bandwidth) && rp.bandwidth > 0 ? 1.0 / (rp.bandwidth * 1e9) : 0.0;
        }
        continue;
      }
      l.cls = ModelLink::kNetwork;
      l.sendPort = 4 * a + 2;
      l.recvPort = 4 * b + 3;
      l.nicOut = nicPortOf(a);
      l.nicIn = nicPortOf(b) + 1;
      if (counted.insert({a, l.nicOut}).second) ++portUsers_[l.nicOut];
      if (counted.insert({b, l.nicIn}).second) ++portUsers_[l.nicIn];
      l.lineGBs = std::min(nicLineGBs(job, host_[a], paths.nicOf(a)), nicLineGBs(job, host_[b], paths.nicOf(b)));
      // How much slower than the line rate the local legs (GPU/CPU to NIC) make this pair: >= 1.
      const double legFactor = rp.bandwidth > 0 && rp.bandwidth < l.lineGBs ? l.lineGBs / rp.bandwidth : 1.0;
      if (const LinkCalibration* c = params_.find(ModelLink::kNetwork, kind)) {
        const double scale = c->speedGbps > 0 ? c->speedGbps / (l.lineGBs * 8.0) : 1.0;
        l.alpha = c->cost.alpha;
        l.nicBeta = c->cost.beta * scale;
        l.beta = l.nicBeta * legFactor;
        l.betaScale = scale * legFactor;
      } else {
        l.alpha = rp.latencyUs * 1e-6;
        l.nicBeta = 1.0 / (l.lineGBs * 1e9);
        l.beta = l.nicBeta * legFactor;
      }
    }
  }
}

bool LinkTable::hasClass(ModelLink c) const {
  for (int a = 0; a < n_; ++a) {
    for (int b = 0; b < n_; ++b) {
      if (a != b && pair(a, b).cls == c) return true;
    }
  }
  return false;
}

LinkCost LinkTable::classCost(ModelLink c) const {
  double alpha = 0, beta = 0;
  int count = 0;
  for (int a = 0; a < n_; ++a) {
    for (int b = 0; b < n_; ++b) {
      const PairLink& l = pair(a, b);
      if (a == b || l.cls != c) continue;
      alpha += l.alpha;
      beta += c == ModelLink::kNetwork ? l.nicBeta : l.beta;
      ++count;
    }
  }
  if (count == 0) return defaultLinkCost(c);
  return {alpha / count, beta / count};
}

}  // namespace tern::planner
