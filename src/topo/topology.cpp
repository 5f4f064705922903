#include "topo/topology.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "base/error.hpp"

namespace tern::topo {

namespace {

constexpr NodeType kAllNodeTypes[] = {NodeType::kMachine, NodeType::kPackage, NodeType::kNuma,    NodeType::kPciSwitch,
                                      NodeType::kGpu,     NodeType::kNic,     NodeType::kNvswitch};

// Node types that hang off a package or a switch and are linked to their parent.
bool isTreeLinked(NodeType t) {
  return t == NodeType::kNuma || t == NodeType::kPciSwitch || t == NodeType::kGpu || t == NodeType::kNic;
}

int gpuSmOf(const HostTopology& host, const Link& l) {
  for (int n : {l.a, l.b}) {
    if (host.nodes[n].type == NodeType::kGpu && host.nodes[n].sm > 0) return host.nodes[n].sm;
  }
  return 0;
}

}  // namespace

const char* nodeTypeName(NodeType t) {
  switch (t) {
    case NodeType::kMachine:
      return "machine";
    case NodeType::kPackage:
      return "package";
    case NodeType::kNuma:
      return "numa";
    case NodeType::kPciSwitch:
      return "pci_switch";
    case NodeType::kGpu:
      return "gpu";
    case NodeType::kNic:
      return "nic";
    case NodeType::kNvswitch:
      return "nvswitch";
  }
  return "?";
}

bool parseNodeType(std::string_view s, NodeType* out) {
  for (NodeType t : kAllNodeTypes) {
    if (s == nodeTypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

HostTopology::HostTopology() {
  Node machine;
  machine.type = NodeType::kMachine;
  machine.id = "machine";
  nodes.push_back(machine);
}

int HostTopology::find(std::string_view nodeId) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id == nodeId) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> HostTopology::nodesOfType(NodeType t) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].type == t) out.push_back(static_cast<int>(i));
  }
  return out;
}

int HostTopology::count(NodeType t) const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [t](const Node& n) { return n.type == t; }));
}

int HostTopology::findLink(int a, int b, LinkType t) const {
  for (size_t i = 0; i < links.size(); ++i) {
    const Link& l = links[i];
    if (l.type == t && ((l.a == a && l.b == b) || (l.a == b && l.b == a))) return static_cast<int>(i);
  }
  return -1;
}

int HostTopology::packageOf(int node) const {
  // Bounded walk: a malformed parent cycle must not hang (validate() reports it).
  for (size_t steps = 0; node >= 0 && steps <= nodes.size(); ++steps) {
    if (nodes[node].type == NodeType::kPackage) return node;
    node = nodes[node].parent;
  }
  return -1;
}

int HostTopology::totalCores() const {
  int n = 0;
  for (const Node& node : nodes) n += node.type == NodeType::kPackage ? node.cores : 0;
  return n;
}

int HostTopology::totalPus() const {
  int n = 0;
  for (const Node& node : nodes) n += node.type == NodeType::kPackage ? node.pus : 0;
  return n;
}

int HostTopology::addNode(Node node) {
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size()) - 1;
}

int HostTopology::addLink(Link link) {
  links.push_back(link);
  return static_cast<int>(links.size()) - 1;
}

void completeHost(HostTopology& host) {
  std::vector<int> packages = host.nodesOfType(NodeType::kPackage);
  if (packages.empty()) {
    Node pkg;
    pkg.type = NodeType::kPackage;
    pkg.id = "pkg0";
    pkg.parent = 0;
    pkg.osIndex = 0;
    packages.push_back(host.addNode(pkg));
  }
  // Devices and memory directly under the machine have unknown locality; the first package is as good a guess as
  // any and keeps every node reachable.
  for (Node& n : host.nodes) {
    if (isTreeLinked(n.type) && (n.parent <= 0)) n.parent = packages[0];
  }
  for (size_t i = 1; i < host.nodes.size(); ++i) {
    const Node& n = host.nodes[i];
    if (!isTreeLinked(n.type) || n.parent < 0) continue;
    LinkType type = n.type == NodeType::kNuma ? LinkType::kMemory : LinkType::kPcie;
    if (host.findLink(n.parent, static_cast<int>(i), type) >= 0) continue;
    Link l;
    l.a = n.parent;
    l.b = static_cast<int>(i);
    l.type = type;
    host.addLink(l);
  }
  bool hasSmp =
      std::any_of(host.links.begin(), host.links.end(), [](const Link& l) { return l.type == LinkType::kSmp; });
  if (!hasSmp) {
    for (size_t i = 0; i < packages.size(); ++i) {
      for (size_t j = i + 1; j < packages.size(); ++j) {
        Link l;
        l.a = packages[i];
        l.b = packages[j];
        l.type = LinkType::kSmp;
        host.addLink(l);
      }
    }
  }
  for (Link& l : host.links) {
    if (l.type == LinkType::kNvlink) {
      if (l.nvlinkVersion <= 0) l.nvlinkVersion = std::max(1, nvlinkVersionForSm(gpuSmOf(host, l)));
      if (l.nvlinkCount <= 0) l.nvlinkCount = 1;
    }
    if (l.bandwidth <= 0) {
      if (l.type == LinkType::kPcie && pcieBandwidth(l.pcieGen, l.pcieWidth) > 0) {
        l.bandwidth = pcieBandwidth(l.pcieGen, l.pcieWidth);
      } else if (l.type == LinkType::kNvlink) {
        l.bandwidth = nvlinkBandwidth(l.nvlinkVersion, l.nvlinkCount);
      } else {
        l.bandwidth = defaultLinkBandwidth(l.type);
      }
    }
    if (l.latencyUs <= 0) l.latencyUs = defaultLinkLatencyUs(l.type);
  }
  // Canonical link order, so that equal graphs built different ways (detected, loaded, round-tripped) compare
  // equal: every node's link to its parent first, in node order, then the other links in the order they came.
  auto treeChild = [&host](const Link& l) {
    return (l.type == LinkType::kMemory || l.type == LinkType::kPcie) && host.nodes[l.b].parent == l.a
               ? l.b
               : static_cast<int>(host.nodes.size());
  };
  std::stable_sort(host.links.begin(), host.links.end(),
                   [&](const Link& x, const Link& y) { return treeChild(x) < treeChild(y); });
}

Network deriveNetwork(const std::vector<HostTopology>& hosts) {
  // Preference when speeds tie: RDMA over plain Ethernet, native IB over RoCE.
  auto rankKind = [](NetKind k) {
    return k == NetKind::kInfiniband ? 3 : k == NetKind::kRoce ? 2 : k == NetKind::kEthernet ? 1 : 0;
  };
  Network net;
  double slowestBest = -1;
  for (const HostTopology& h : hosts) {
    const Node* best = nullptr;
    for (const Node& n : h.nodes) {
      if (n.type != NodeType::kNic) continue;
      if (best == nullptr || n.speedGbps > best->speedGbps ||
          (n.speedGbps == best->speedGbps && rankKind(n.netKind) > rankKind(best->netKind))) {
        best = &n;
      }
    }
    if (best == nullptr) continue;
    if (rankKind(best->netKind) > rankKind(net.kind)) net.kind = best->netKind;
    if (best->speedGbps > 0 && (slowestBest < 0 || best->speedGbps < slowestBest)) slowestBest = best->speedGbps;
  }
  net.speedGbps = slowestBest;
  return net;
}

std::vector<RankPlacement> defaultRanks(const std::vector<HostTopology>& hosts) {
  std::vector<RankPlacement> ranks;
  for (size_t h = 0; h < hosts.size(); ++h) {
    std::vector<int> gpus = hosts[h].nodesOfType(NodeType::kGpu);
    if (gpus.empty()) {
      ranks.push_back({static_cast<int>(h), -1, -1});
      continue;
    }
    for (int g : gpus) ranks.push_back({static_cast<int>(h), g, -1});
  }
  return ranks;
}

void validate(const JobTopology& job, const std::string& where) {
  if (job.hosts.empty()) throwError(ternInvalidArgument, "%s: no hosts", where.c_str());
  if (job.ranks.empty()) throwError(ternInvalidArgument, "%s: no ranks", where.c_str());
  std::set<std::string> hostIds;
  for (size_t h = 0; h < job.hosts.size(); ++h) {
    const HostTopology& host = job.hosts[h];
    std::string at = format("%s: host %zu (\"%s\")", where.c_str(), h, host.id.c_str());
    if (host.id.empty()) throwError(ternInvalidArgument, "%s: empty host id", at.c_str());
    if (!hostIds.insert(host.id).second) throwError(ternInvalidArgument, "%s: duplicate host id", at.c_str());
    if (host.nodes.empty() || host.nodes[0].type != NodeType::kMachine || host.nodes[0].parent != -1) {
      throwError(ternInvalidArgument, "%s: node 0 must be the machine", at.c_str());
    }
    const int n = static_cast<int>(host.nodes.size());
    std::set<std::string> nodeIds;
    for (int i = 0; i < n; ++i) {
      const Node& node = host.nodes[i];
      if (node.id.empty()) throwError(ternInvalidArgument, "%s: node %d has no id", at.c_str(), i);
      if (!nodeIds.insert(node.id).second) {
        throwError(ternInvalidArgument, "%s: duplicate node id \"%s\"", at.c_str(), node.id.c_str());
      }
      if (i == 0) continue;
      if (node.type == NodeType::kMachine) {
        throwError(ternInvalidArgument, "%s: node \"%s\": a host has one machine node", at.c_str(), node.id.c_str());
      }
      if (node.parent < 0 || node.parent >= n || node.parent == i) {
        throwError(ternInvalidArgument, "%s: node \"%s\": bad parent", at.c_str(), node.id.c_str());
      }
      int p = node.parent;
      for (int steps = 0; p > 0; ++steps, p = host.nodes[p].parent) {
        if (steps > n || p >= n) {
          throwError(ternInvalidArgument, "%s: node \"%s\": parent chain loops", at.c_str(), node.id.c_str());
        }
      }
      if (node.type == NodeType::kNic &&
          (node.speedGbps == 0 || !std::isfinite(node.speedGbps) || (node.speedGbps < 0 && node.speedGbps != -1))) {
        throwError(ternInvalidArgument, "%s: nic \"%s\": speed must be > 0 (or -1 for unknown)", at.c_str(),
                   node.id.c_str());
      }
    }
    for (size_t k = 0; k < host.links.size(); ++k) {
      const Link& l = host.links[k];
      if (l.a < 0 || l.a >= n || l.b < 0 || l.b >= n || l.a == l.b) {
        throwError(ternInvalidArgument, "%s: link %zu joins bad nodes (%d, %d)", at.c_str(), k, l.a, l.b);
      }
      if (!(l.bandwidth > 0) || !(l.latencyUs >= 0) || !std::isfinite(l.latencyUs)) {
        throwError(ternInvalidArgument, "%s: link %zu (%s - %s): bandwidth must be > 0 and latency >= 0", at.c_str(), k,
                   host.nodes[l.a].id.c_str(), host.nodes[l.b].id.c_str());
      }
      if (l.type == LinkType::kNet) {
        throwError(ternInvalidArgument, "%s: link %zu: net links join hosts, not nodes of one host", at.c_str(), k);
      }
    }
  }
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const RankPlacement& p = job.ranks[r];
    if (p.host < 0 || p.host >= static_cast<int>(job.hosts.size())) {
      throwError(ternInvalidArgument, "%s: rank %zu: host %d out of range", where.c_str(), r, p.host);
    }
    const HostTopology& host = job.hosts[p.host];
    const int n = static_cast<int>(host.nodes.size());
    if (p.gpu != -1 && (p.gpu < 0 || p.gpu >= n || host.nodes[p.gpu].type != NodeType::kGpu)) {
      throwError(ternInvalidArgument, "%s: rank %zu: gpu is not a GPU of host \"%s\"", where.c_str(), r,
                 host.id.c_str());
    }
    if (p.numa != -1 && (p.numa < 0 || p.numa >= n || host.nodes[p.numa].type != NodeType::kNuma)) {
      throwError(ternInvalidArgument, "%s: rank %zu: numa is not a NUMA node of host \"%s\"", where.c_str(), r,
                 host.id.c_str());
    }
    if (p.nic != -1 && (p.nic < 0 || p.nic >= n || host.nodes[p.nic].type != NodeType::kNic)) {
      throwError(ternInvalidArgument, "%s: rank %zu: nic is not a NIC of host \"%s\"", where.c_str(), r,
                 host.id.c_str());
    }
  }
  if (job.network.speedGbps == 0 || job.network.speedGbps < -1) {
    throwError(ternInvalidArgument, "%s: network speed must be > 0 (or -1 for unknown)", where.c_str());
  }
}

bool placesGpus(const JobTopology& job) {
  return std::any_of(job.ranks.begin(), job.ranks.end(), [](const RankPlacement& p) { return p.gpu >= 0; });
}

JobTopology withCpuRanks(JobTopology job) {
  for (RankPlacement& p : job.ranks) p.gpu = -1;
  return job;
}

std::string normalizeBusId(std::string_view busId) {
  std::string s(busId);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) == 4) {
    return format("%04x:%02x:%02x.%x", domain, bus, dev, fn);
  }
  if (std::sscanf(s.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3) {
    return format("0000:%02x:%02x.%x", bus, dev, fn);
  }
  return s;
}

}  // namespace tern::topo
