#include "topo/detect_util.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <tuple>

#include "base/error.hpp"

namespace tern::topo {

namespace {

// Keeps the nodes in `order` (a permutation of a subset of node indices that starts with the machine), remapping
// parents and links; links touching a dropped node go too.
void reorder(HostTopology& host, const std::vector<int>& order) {
  std::vector<int> remap(host.nodes.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) remap[order[i]] = static_cast<int>(i);
  std::vector<Node> nodes;
  nodes.reserve(order.size());
  for (int old : order) {
    Node n = host.nodes[old];
    n.parent = n.parent >= 0 ? remap[n.parent] : -1;
    nodes.push_back(std::move(n));
  }
  std::vector<Link> links;
  for (Link l : host.links) {
    if (remap[l.a] < 0 || remap[l.b] < 0) continue;
    l.a = remap[l.a];
    l.b = remap[l.b];
    links.push_back(l);
  }
  host.nodes = std::move(nodes);
  host.links = std::move(links);
}

// "mlx5_10" -> ("mlx5_", 10): names compare by prefix, then by trailing number.
std::pair<std::string, long> naturalKey(const std::string& s) {
  size_t end = s.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(s[end - 1]))) --end;
  long number = end < s.size() ? std::stol(s.substr(end, 9)) : -1;
  return {s.substr(0, end), number};
}

}  // namespace

bool isNvidiaGpu(uint16_t vendorId, uint16_t classId) {
  return vendorId == 0x10de && (classId == 0x0302 || classId == 0x0300);
}

void pruneEmptySwitches(HostTopology& host) {
  // A switch is kept when some GPU or NIC has it as an ancestor.
  std::vector<bool> used(host.nodes.size(), false);
  for (const Node& n : host.nodes) {
    if (n.type != NodeType::kGpu && n.type != NodeType::kNic) continue;
    for (int p = n.parent, steps = 0; p >= 0 && steps < static_cast<int>(host.nodes.size()); p = host.nodes[p].parent) {
      used[p] = true;
      ++steps;
    }
  }
  std::vector<int> order;
  for (size_t i = 0; i < host.nodes.size(); ++i) {
    if (host.nodes[i].type != NodeType::kPciSwitch || used[i]) order.push_back(static_cast<int>(i));
  }
  if (order.size() != host.nodes.size()) reorder(host, order);
}

void canonicalizeDevices(HostTopology& host) {
  auto typeRank = [](NodeType t) { return static_cast<int>(t); };  // enum order: machine, package, numa, switch, ...
  std::vector<int> order(host.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int i) {
    const Node& n = host.nodes[i];
    const bool byOsIndex = n.type == NodeType::kPackage || n.type == NodeType::kNuma || n.type == NodeType::kGpu;
    const long os = byOsIndex && n.osIndex >= 0 ? n.osIndex : 1L << 30;
    auto [prefix, number] = n.type == NodeType::kNic ? naturalKey(n.name) : std::pair<std::string, long>{"", 0};
    return std::make_tuple(typeRank(n.type), os, prefix, number, n.busId, i);
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  reorder(host, order);
  int counters[8] = {};
  static constexpr const char* kPrefix[] = {"machine", "pkg", "numa", "sw", "gpu", "nic", "nvs"};
  for (Node& n : host.nodes) {
    const int t = static_cast<int>(n.type);
    const int ordinal = counters[t]++;
    n.id = n.type == NodeType::kMachine ? "machine" : format("%s%d", kPrefix[t], ordinal);
    if (n.type == NodeType::kGpu && n.osIndex < 0) n.osIndex = ordinal;
  }
}

std::string baseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace tern::topo
