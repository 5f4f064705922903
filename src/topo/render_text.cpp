#include <algorithm>
#include <cstdio>
#include <map>

#include "base/error.hpp"
#include "topo/render.hpp"

namespace tern::topo {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr size_t kMaxRankLines = 16;  // rank-path lines printed before summarising the rest
constexpr size_t kTextWidth = 118;

std::string gib(uint64_t bytes) { return formatNumber(static_cast<double>(bytes) / kGiB) + " GiB"; }

// {0,1,2,3,8} -> "0-3, 8".
std::string rankRanges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i ? format("%d-%d", ranks[i], ranks[j]) : std::to_string(ranks[i]);
    i = j + 1;
  }
  return out;
}

// "1 GPU", "2 GPUs".
std::string counted(long n, const char* noun) { return format("%ld %s%s", n, noun, n == 1 ? "" : "s"); }

// Word-wraps free text (a file's description) to the width of the rest of the output.
std::string wrap(const std::string& text, size_t width) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = end + 1;
  }
  return line.empty() ? out : out + line + "\n";
}

std::string netSpeed(double gbps) { return gbps > 0 ? formatNumber(gbps) + " Gb/s" : "speed unknown"; }

std::string nodeLine(const HostTopology& host, int i, const std::vector<int>& ranks) {
  const Node& n = host.nodes[i];
  std::string s = n.id;
  switch (n.type) {
    case NodeType::kPackage:
      s += ":";
      if (!n.name.empty()) s += " " + n.name;
      if (!n.vendor.empty()) s += " (" + n.vendor + ")";
      if (n.cores > 0) {
        s += (n.name.empty() && n.vendor.empty() ? " " : ", ") + counted(n.cores, "core") + ", " +
             counted(n.pus, "thread");
      }
      break;
    case NodeType::kNuma:
      s += format(" (os %d):", n.osIndex);
      if (n.memoryBytes > 0) s += " " + gib(n.memoryBytes) + ",";
      s += " " + counted(n.cores, "core");
      break;
    case NodeType::kPciSwitch:
      s += " PCIe switch";
      if (!n.busId.empty()) s += " " + n.busId;
      break;
    case NodeType::kGpu:
      if (n.osIndex >= 0) s += format(" (dev %d)", n.osIndex);
      if (!n.busId.empty()) s += " " + n.busId;
      if (!n.name.empty()) s += " " + n.name;
      if (n.sm > 0) s += format(", sm %d", n.sm);
      if (n.memoryBytes > 0) s += ", " + gib(n.memoryBytes);
      break;
    case NodeType::kNic:
      s += " " + n.name;
      if (!n.netdev.empty() && n.netdev != n.name) s += " (" + n.netdev + ")";
      if (!n.busId.empty()) s += " " + n.busId;
      s += std::string(": ") + netKindName(n.netKind) + " " + netSpeed(n.speedGbps);
      if (n.port > 0) s += format(", port %d", n.port);
      if (n.gdr) s += ", GPUDirect RDMA";
      break;
    case NodeType::kNvswitch:
      s += " NVSwitch fabric";
      break;
    case NodeType::kMachine:
      break;
  }
  for (const Link& l : host.links) {
    if (l.b == i && l.a == n.parent && (l.type == LinkType::kPcie || l.type == LinkType::kMemory)) {
      s += "  <- " + describeLink(l);
      break;
    }
  }
  if (!ranks.empty()) s += (ranks.size() == 1 ? "  [rank " : "  [ranks ") + rankRanges(ranks) + "]";
  return s;
}

void printTree(const HostTopology& host, int node, int depth, const std::map<int, std::vector<int>>& ranksOn,
               std::string& out) {
  static const std::vector<int> kNone;
  auto it = ranksOn.find(node);
  out += std::string(2 * depth, ' ') + nodeLine(host, node, it == ranksOn.end() ? kNone : it->second) + "\n";
  for (size_t c = 0; c < host.nodes.size(); ++c) {
    if (host.nodes[c].parent == node) printTree(host, static_cast<int>(c), depth + 1, ranksOn, out);
  }
}

std::string hostHeader(const JobTopology& job, int h, const std::vector<int>& ranks) {
  const HostTopology& host = job.hosts[h];
  uint64_t memory = 0;
  for (const Node& n : host.nodes) memory += n.type == NodeType::kNuma ? n.memoryBytes : 0;
  std::string s = format("host %d \"%s\"", h, host.id.c_str());
  if (!host.hostname.empty() && host.hostname != host.id) s += " (" + host.hostname + ")";
  s += ": " + counted(host.count(NodeType::kPackage), "package") + ", " + counted(host.totalCores(), "core") + ", " +
       counted(host.totalPus(), "thread");
  if (memory > 0) s += ", " + gib(memory);
  s += ", " + counted(host.count(NodeType::kGpu), "GPU") + ", " + counted(host.count(NodeType::kNic), "NIC");
  s += ranks.empty() ? "; no ranks" : (ranks.size() == 1 ? "; rank " : "; ranks ") + rankRanges(ranks);
  return s;
}

}  // namespace

std::string renderPathMatrix(const HostTopology& host, const HostPaths& paths) {
  std::vector<int> cols;
  for (NodeType t : {NodeType::kGpu, NodeType::kNic, NodeType::kNuma}) {
    for (int n : host.nodesOfType(t)) cols.push_back(n);
  }
  size_t width = 4;
  for (int c : cols) width = std::max(width, host.nodes[c].id.size() + 1);
  auto cell = [width](const std::string& s) { return s + std::string(width - std::min(width, s.size()), ' '); };
  std::string out = cell("");
  for (int c : cols) out += cell(host.nodes[c].id);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  out += "\n";
  for (int r : cols) {
    std::string line = cell(host.nodes[r].id);
    for (int c : cols) line += cell(r == c ? "X" : pathTypeName(paths.get(r, c).type));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string renderText(const JobTopology& job) {
  std::string out;
  const Network& net = job.network;
  out += format("job \"%s\": ", job.name.c_str()) + counted(static_cast<long>(job.hosts.size()), "host") + ", " +
         counted(static_cast<long>(job.ranks.size()), "rank");
  if (job.hosts.size() > 1 || job.hosts[0].count(NodeType::kNic) > 0) {
    const double latency = net.latencyUs >= 0 ? net.latencyUs : defaultNetLatencyUs(net.kind);
    out += std::string("; network ") + netKindName(net.kind) + " " + netSpeed(net.speedGbps) + ", " +
           formatNumber(latency) + " us";
  }
  out += "\n";
  if (!job.description.empty()) out += wrap(job.description, kTextWidth);

  for (size_t h = 0; h < job.hosts.size(); ++h) {
    const HostTopology& host = job.hosts[h];
    std::vector<int> ranks;
    std::map<int, std::vector<int>> ranksOn;  // GPU / NUMA node -> ranks placed there
    for (size_t r = 0; r < job.ranks.size(); ++r) {
      const RankPlacement& p = job.ranks[r];
      if (p.host != static_cast<int>(h)) continue;
      ranks.push_back(static_cast<int>(r));
      if (p.gpu >= 0) ranksOn[p.gpu].push_back(static_cast<int>(r));
      if (p.gpu < 0 && p.numa >= 0) ranksOn[p.numa].push_back(static_cast<int>(r));
    }
    out += "\n" + hostHeader(job, static_cast<int>(h), ranks) + "\n";
    int same = -1;
    for (size_t e = 0; e < h && same < 0; ++e) {
      if (job.hosts[e].nodes == host.nodes && job.hosts[e].links == host.links) same = static_cast<int>(e);
    }
    if (same >= 0) {
      out += format("  same hardware as host %d\n", same);
      continue;
    }
    for (size_t c = 1; c < host.nodes.size(); ++c) {
      if (host.nodes[c].parent == 0) printTree(host, static_cast<int>(c), 1, ranksOn, out);
    }
    bool header = false;
    for (const Link& l : host.links) {
      if (l.type != LinkType::kNvlink && l.type != LinkType::kSmp) continue;
      if (!header) out += "  links:\n";
      header = true;
      out +=
          format("    %s - %s: %s\n", host.nodes[l.a].id.c_str(), host.nodes[l.b].id.c_str(), describeLink(l).c_str());
    }
    const HostPaths paths(host);
    std::string matrix = renderPathMatrix(host, paths);
    out += "  paths:\n";
    size_t pos = 0;
    while (pos < matrix.size()) {
      size_t nl = matrix.find('\n', pos);
      out += "    " + matrix.substr(pos, nl - pos) + "\n";
      pos = nl + 1;
    }
  }

  if (job.ranks.size() > 1) {
    const JobPaths paths(job);
    out += "\nrank paths from rank 0 (type, class, bottleneck bandwidth per direction, latency):\n";
    std::map<std::string, int> summary;
    for (size_t r = 1; r < job.ranks.size(); ++r) {
      const RankPath p = paths.between(0, static_cast<int>(r));
      const std::string kind = std::string(pathTypeName(p.type)) + "/" + linkClassName(p.linkClass);
      ++summary[kind];
      if (r > kMaxRankLines) continue;
      const RankPlacement& pl = job.ranks[r];
      std::string where = format("host %d", pl.host);
      if (pl.gpu >= 0) where += " " + job.hosts[pl.host].nodes[pl.gpu].id;
      if (pl.gpu < 0 && pl.numa >= 0) where += " " + job.hosts[pl.host].nodes[pl.numa].id;
      std::string via;
      if (p.type == PathType::kNet) {
        const std::string src = p.srcNic >= 0 ? job.hosts[job.ranks[0].host].nodes[p.srcNic].id : "-";
        const std::string dst = p.dstNic >= 0 ? job.hosts[pl.host].nodes[p.dstNic].id : "-";
        via.append("  via ").append(src).append(" -> ").append(dst);
      }
      out += format("  rank %-3zu (%s): %s %-8s %8s GB/s %7s us%s\n", r, where.c_str(), pathTypeName(p.type),
                    linkClassName(p.linkClass), formatNumber(p.bandwidth).c_str(), formatNumber(p.latencyUs).c_str(),
                    via.c_str());
    }
    if (job.ranks.size() - 1 > kMaxRankLines) {
      out += format("  ... %zu more;", job.ranks.size() - 1 - kMaxRankLines);
      for (auto [kind, n] : summary) out += format(" %s x%d", kind.c_str(), n);
      out += "\n";
    }
  }

  out +=
      "\nlegend: X self, NVL NVLink (direct or NVSwitch), PIX at most one PCIe switch, PXB several PCIe switches,\n"
      "        PHB through a CPU host bridge, SYS across CPU sockets (QPI/UPI/xGMI), NET across hosts\n";
  return out;
}

}  // namespace tern::topo
