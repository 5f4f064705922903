#include "topo/paths.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace tern::topo {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Bounds on the search: no real host has paths longer than this, and they keep a malformed file from exploding it.
constexpr size_t kMaxLinks = 24;
constexpr int kMaxSmpLinks = 3;

// Devices and memory end paths; only CPUs, switches and the NVSwitch fabric forward traffic.
bool isTransit(NodeType t) { return t == NodeType::kPackage || t == NodeType::kPciSwitch || t == NodeType::kNvswitch; }

PathType classify(const HostTopology& host, const std::vector<int>& nodes, const std::vector<int>& links) {
  if (links.empty()) return PathType::kLoc;
  bool smp = false;
  bool allNvlink = true;
  for (int li : links) {
    smp |= host.links[li].type == LinkType::kSmp;
    allNvlink &= host.links[li].type == LinkType::kNvlink;
  }
  if (smp) return PathType::kSys;
  bool cpu = false;
  int switches = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeType t = host.nodes[nodes[i]].type;
    cpu |= t == NodeType::kPackage || t == NodeType::kNuma;
    if (t == NodeType::kPciSwitch && i > 0 && i + 1 < nodes.size()) ++switches;
  }
  if (cpu) return PathType::kPhb;
  if (allNvlink) return PathType::kNvl;
  return switches <= 1 ? PathType::kPix : PathType::kPxb;
}

// True when a is a better path than b: best type, then bandwidth, latency, length.
bool better(const Path& a, const Path& b) {
  if (a.type != b.type) return a.type < b.type;
  if (a.bandwidth != b.bandwidth) return a.bandwidth > b.bandwidth;
  if (a.latencyUs != b.latencyUs) return a.latencyUs < b.latencyUs;
  return a.links.size() < b.links.size();
}

// Depth-first enumeration of the simple paths from one source, keeping the best path to every node. Host graphs are
// trees plus a few NVLink and SMP edges, and only a handful of node types forward traffic, so the number of simple
// paths stays small.
class PathSearch {
 public:
  explicit PathSearch(const HostTopology& host) : host_(host), adjacency_(host.nodes.size()) {
    for (size_t i = 0; i < host.links.size(); ++i) {
      const Link& l = host.links[i];
      adjacency_[l.a].push_back({static_cast<int>(i), l.b});
      adjacency_[l.b].push_back({static_cast<int>(i), l.a});
    }
  }

  // Best paths from `source` to every node (index = node).
  std::vector<Path> from(int source) {
    best_.assign(host_.nodes.size(), Path{});
    onPath_.assign(host_.nodes.size(), false);
    nodes_.assign(1, source);
    links_.clear();
    smpLinks_ = 0;
    onPath_[source] = true;
    best_[source] = Path{PathType::kLoc, kInf, 0, {}};
    visit(source);
    return std::move(best_);
  }

 private:
  void visit(int node) {
    if (nodes_.size() > 1) {
      Path p;
      p.type = classify(host_, nodes_, links_);
      p.bandwidth = kInf;
      for (int li : links_) {
        p.bandwidth = std::min(p.bandwidth, host_.links[li].bandwidth);
        p.latencyUs += host_.links[li].latencyUs;
      }
      p.links = links_;
      if (best_[node].type == PathType::kDis || better(p, best_[node])) best_[node] = std::move(p);
      if (!isTransit(host_.nodes[node].type)) return;
    }
    if (links_.size() >= kMaxLinks) return;
    for (auto [li, next] : adjacency_[node]) {
      if (onPath_[next]) continue;
      bool smp = host_.links[li].type == LinkType::kSmp;
      if (smp && smpLinks_ >= kMaxSmpLinks) continue;
      onPath_[next] = true;
      nodes_.push_back(next);
      links_.push_back(li);
      smpLinks_ += smp;
      visit(next);
      smpLinks_ -= smp;
      links_.pop_back();
      nodes_.pop_back();
      onPath_[next] = false;
    }
  }

  const HostTopology& host_;
  std::vector<std::vector<std::pair<int, int>>> adjacency_;  // node -> (link, neighbour)
  std::vector<Path> best_;
  std::vector<bool> onPath_;
  std::vector<int> nodes_;
  std::vector<int> links_;
  int smpLinks_ = 0;
};

}  // namespace

const char* pathTypeName(PathType t) {
  switch (t) {
    case PathType::kLoc:
      return "LOC";
    case PathType::kNvl:
      return "NVL";
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kPhb:
      return "PHB";
    case PathType::kSys:
      return "SYS";
    case PathType::kNet:
      return "NET";
    case PathType::kDis:
      return "DIS";
  }
  return "?";
}

LinkClass linkClassOf(PathType t) {
  switch (t) {
    case PathType::kLoc:
      return LinkClass::kShm;
    case PathType::kNvl:
      return LinkClass::kNvlink;
    case PathType::kPix:
    case PathType::kPxb:
    case PathType::kPhb:
      return LinkClass::kPcie;
    case PathType::kSys:
      return LinkClass::kSmp;
    case PathType::kNet:
    case PathType::kDis:
      return LinkClass::kNetwork;
  }
  return LinkClass::kNetwork;
}

HostPaths::HostPaths(const HostTopology& host) : n_(host.nodes.size()), paths_(n_ * n_) {
  PathSearch search(host);
  for (size_t a = 0; a < n_; ++a) {
    std::vector<Path> row = search.from(static_cast<int>(a));
    std::move(row.begin(), row.end(), paths_.begin() + static_cast<std::ptrdiff_t>(a * n_));
  }
}

JobPaths::JobPaths(const JobTopology& job) : job_(job), nic_(job.ranks.size(), -1) {
  hosts_.reserve(job.hosts.size());
  for (const HostTopology& h : job.hosts) hosts_.emplace_back(h);
  std::vector<int> ordinal(job.hosts.size(), 0);  // next local rank number per host
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const int h = job.ranks[r].host;
    const int local = ordinal[h]++;
    if (job.ranks[r].nic >= 0) {  // placed on a NIC (a file, or the job a communicator assembled)
      nic_[r] = job.ranks[r].nic;
      continue;
    }
    const std::vector<int> nics = job.hosts[h].nodesOfType(NodeType::kNic);
    if (nics.empty()) continue;
    const int src = sourceNode(static_cast<int>(r));
    // Nearest NICs: best path type, then most bandwidth to the fabric.
    std::vector<int> candidates;
    PathType bestType = PathType::kDis;
    double bestBw = -1;
    for (int nic : nics) {
      PathType type = PathType::kPhb;
      double bw = nicBandwidth(h, nic);
      if (src >= 0) {
        const Path& p = hosts_[h].get(src, nic);
        type = p.type;
        bw = std::min(bw, p.bandwidth);
      }
      if (candidates.empty() || type < bestType || (type == bestType && bw > bestBw)) {
        candidates.assign(1, nic);
        bestType = type;
        bestBw = bw;
      } else if (type == bestType && bw == bestBw) {
        candidates.push_back(nic);
      }
    }
    nic_[r] = candidates[static_cast<size_t>(local) % candidates.size()];
  }
}

int JobPaths::sourceNode(int rank) const {
  const RankPlacement& p = job_.ranks[rank];
  return p.gpu >= 0 ? p.gpu : p.numa;
}

double JobPaths::nicBandwidth(int host, int nic) const {
  const Network& net = job_.network;
  double gbps = net.speedGbps > 0 ? net.speedGbps : kUnknownNicSpeedGbps;
  if (nic >= 0 && job_.hosts[host].nodes[nic].speedGbps > 0) gbps = job_.hosts[host].nodes[nic].speedGbps;
  if (net.speedGbps > 0) gbps = std::min(gbps, net.speedGbps);
  return gbps / 8.0;
}

RankPath JobPaths::between(int a, int b) const {
  const LinkClassDefaults shm = linkClassDefaults(LinkClass::kShm);
  const RankPath local{PathType::kLoc, LinkClass::kShm, shm.bandwidthGBs, shm.alphaUs, -1, -1};
  if (a == b) return local;
  const RankPlacement& pa = job_.ranks[a];
  const RankPlacement& pb = job_.ranks[b];

  if (pa.host != pb.host) {
    RankPath out;
    out.type = PathType::kNet;
    out.linkClass = LinkClass::kNetwork;
    out.srcNic = nic_[a];
    out.dstNic = nic_[b];
    const Network& net = job_.network;
    out.latencyUs = net.latencyUs >= 0 ? net.latencyUs : defaultNetLatencyUs(net.kind);
    out.bandwidth = std::min(nicBandwidth(pa.host, out.srcNic), nicBandwidth(pb.host, out.dstNic));
    for (auto [rank, nic] : {std::pair{a, out.srcNic}, std::pair{b, out.dstNic}}) {
      const int src = sourceNode(rank);
      if (src < 0 || nic < 0) continue;
      const Path& leg = hosts_[job_.ranks[rank].host].get(src, nic);
      out.bandwidth = std::min(out.bandwidth, leg.bandwidth);
      out.latencyUs += leg.latencyUs;
    }
    return out;
  }

  const HostTopology& host = job_.hosts[pa.host];
  const HostPaths& paths = hosts_[pa.host];
  auto fromPath = [](const Path& p) { return RankPath{p.type, linkClassOf(p.type), p.bandwidth, p.latencyUs, -1, -1}; };
  if (pa.gpu >= 0 && pb.gpu >= 0) return pa.gpu == pb.gpu ? local : fromPath(paths.get(pa.gpu, pb.gpu));
  if (pa.gpu >= 0 || pb.gpu >= 0) {
    const int gpu = pa.gpu >= 0 ? pa.gpu : pb.gpu;
    int cpu = pa.gpu >= 0 ? pb.numa : pa.numa;
    if (cpu < 0) {
      // Unbound CPU rank: assume it runs next to the GPU, on the nearest NUMA node (or the GPU's package).
      cpu = host.packageOf(gpu);
      for (int numa : host.nodesOfType(NodeType::kNuma)) {
        if (cpu < 0 || better(paths.get(gpu, numa), paths.get(gpu, cpu))) cpu = numa;
      }
    }
    return cpu < 0 ? local : fromPath(paths.get(gpu, cpu));
  }
  // Two CPU ranks: shared memory, plus the SMP link when they sit on different sockets.
  if (pa.numa >= 0 && pb.numa >= 0 && host.packageOf(pa.numa) != host.packageOf(pb.numa)) {
    const Path& p = paths.get(pa.numa, pb.numa);
    return RankPath{p.type, linkClassOf(p.type), std::min(p.bandwidth, shm.bandwidthGBs), shm.alphaUs + p.latencyUs, -1,
                    -1};
  }
  return local;
}

RankPath rankPath(const JobTopology& job, int a, int b) { return JobPaths(job).between(a, b); }

}  // namespace tern::topo
