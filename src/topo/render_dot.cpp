#include <map>

#include "base/error.hpp"
#include "topo/render.hpp"

namespace tern::topo {

namespace {

// Graphviz ids must be unique across clusters: prefix node ids with the host index.
std::string dotId(int host, const Node& n) { return format("\"h%d_%s\"", host, n.id.c_str()); }

// A double-quoted dot string; line breaks become dot's "\n".
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string label(const Node& n, const std::vector<int>& ranks) {
  std::string s = n.id;
  switch (n.type) {
    case NodeType::kPackage:
      if (!n.name.empty()) s += "\n" + n.name;
      if (n.cores > 0) s += format("\n%d cores", n.cores);
      break;
    case NodeType::kNuma:
      if (n.memoryBytes > 0)
        s += "\n" + formatNumber(static_cast<double>(n.memoryBytes) / (1024.0 * 1024 * 1024)) + " GiB";
      break;
    case NodeType::kPciSwitch:
      s += "\nPCIe switch";
      break;
    case NodeType::kGpu:
      if (!n.name.empty()) s += "\n" + n.name;
      break;
    case NodeType::kNic:
      s += " " + n.name + "\n" + netKindName(n.netKind) + " " +
           (n.speedGbps > 0 ? formatNumber(n.speedGbps) + " Gb/s" : "speed unknown");
      break;
    case NodeType::kNvswitch:
      s += "\nNVSwitch";
      break;
    case NodeType::kMachine:
      break;
  }
  for (size_t i = 0; i < ranks.size(); ++i) s += (i == 0 ? "\nrank " : ",") + std::to_string(ranks[i]);
  return s;
}

const char* shapeOf(NodeType t) {
  switch (t) {
    case NodeType::kPackage:
      return "shape=box3d, style=filled, fillcolor=\"#fde0c5\"";
    case NodeType::kNuma:
      return "shape=cylinder, style=filled, fillcolor=\"#eeeeee\"";
    case NodeType::kPciSwitch:
      return "shape=hexagon, style=filled, fillcolor=\"#dbe9f6\"";
    case NodeType::kGpu:
      return "shape=box, style=\"filled,rounded\", fillcolor=\"#b7e4c7\"";
    case NodeType::kNic:
      return "shape=box, style=\"filled,rounded\", fillcolor=\"#ffd6a5\"";
    case NodeType::kNvswitch:
      return "shape=octagon, style=filled, fillcolor=\"#95d5b2\"";
    case NodeType::kMachine:
      break;
  }
  return "shape=box";
}

const char* edgeStyle(LinkType t) {
  switch (t) {
    case LinkType::kNvlink:
      return "color=\"#2d6a4f\", penwidth=2";
    case LinkType::kPcie:
      return "color=\"#1f77b4\"";
    case LinkType::kSmp:
      return "color=\"#d62728\", penwidth=2";
    case LinkType::kMemory:
      return "color=\"#888888\"";
    case LinkType::kNet:
      return "color=\"#ff7f0e\", penwidth=2";
  }
  return "";
}

}  // namespace

std::string renderDot(const JobTopology& job) {
  std::string out = "graph topology {\n";
  out += "  graph [fontname=\"Helvetica\", fontsize=12, label=" + quote(job.name.empty() ? "topology" : job.name) +
         ", labelloc=t, newrank=true];\n";
  out += "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n";
  for (size_t h = 0; h < job.hosts.size(); ++h) {
    const HostTopology& host = job.hosts[h];
    const int hi = static_cast<int>(h);
    std::map<int, std::vector<int>> ranksOn;
    for (size_t r = 0; r < job.ranks.size(); ++r) {
      const RankPlacement& p = job.ranks[r];
      if (p.host != hi) continue;
      const int node = p.gpu >= 0 ? p.gpu : p.numa;
      if (node >= 0) ranksOn[node].push_back(static_cast<int>(r));
    }
    out += format("  subgraph cluster_h%d {\n", hi);
    out += "    label=" + quote(format("host %d: %s", hi, host.id.c_str())) + "; style=rounded; color=\"#555555\";\n";
    for (size_t i = 1; i < host.nodes.size(); ++i) {
      const Node& n = host.nodes[i];
      auto it = ranksOn.find(static_cast<int>(i));
      const std::string text = label(n, it == ranksOn.end() ? std::vector<int>{} : it->second);
      out += format("    %s [label=%s, %s];\n", dotId(hi, n).c_str(), quote(text).c_str(), shapeOf(n.type));
    }
    for (const Link& l : host.links) {
      out += format("    %s -- %s [label=%s, %s];\n", dotId(hi, host.nodes[l.a]).c_str(),
                    dotId(hi, host.nodes[l.b]).c_str(), quote(describeLink(l)).c_str(), edgeStyle(l.type));
    }
    out += "  }\n";
  }
  bool anyNic = false;
  for (const HostTopology& h : job.hosts) anyNic |= h.count(NodeType::kNic) > 0;
  if (job.hosts.size() > 1 || anyNic) {
    const Network& net = job.network;
    const std::string speed = net.speedGbps > 0 ? formatNumber(net.speedGbps) + " Gb/s" : "";
    out += "  \"network\" [label=" + quote(std::string("network\n") + netKindName(net.kind) + " " + speed) +
           ", shape=ellipse, style=filled, fillcolor=\"#ffe8cc\"];\n";
    for (size_t h = 0; h < job.hosts.size(); ++h) {
      const HostTopology& host = job.hosts[h];
      for (int nic : host.nodesOfType(NodeType::kNic)) {
        const Node& n = host.nodes[nic];
        const std::string edge = n.speedGbps > 0 ? formatNumber(n.speedGbps) + " Gb/s" : "";
        out += format("  %s -- \"network\" [label=%s, %s];\n", dotId(static_cast<int>(h), n).c_str(),
                      quote(edge).c_str(), edgeStyle(LinkType::kNet));
      }
    }
  }
  out += "}\n";
  return out;
}

}  // namespace tern::topo
