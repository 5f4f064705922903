// Writing the JSON topology format (schema in topo_json.hpp): fully explicit, so that reading it back gives the
// same topology.
#include <nlohmann/json.hpp>

#include "topo/topo_json.hpp"

namespace tern::topo {

using nlohmann::ordered_json;  // written files keep fields in a readable order (id, type, parent, ...)

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

bool isTreeLinked(NodeType t) {
  return t == NodeType::kNuma || t == NodeType::kPciSwitch || t == NodeType::kGpu || t == NodeType::kNic;
}

ordered_json linkToJson(const Link& l) {
  ordered_json j;
  j["type"] = linkTypeName(l.type);
  if (l.type == LinkType::kPcie) {
    if (l.pcieGen > 0) j["gen"] = l.pcieGen;
    if (l.pcieWidth > 0) j["width"] = l.pcieWidth;
  }
  if (l.type == LinkType::kNvlink) {
    j["count"] = l.nvlinkCount;
    j["version"] = l.nvlinkVersion;
  }
  j["bandwidth"] = l.bandwidth;
  j["latency_us"] = l.latencyUs;
  return j;
}

bool isTreeLink(const HostTopology& host, const Link& l) {
  return (l.type == LinkType::kMemory || l.type == LinkType::kPcie) && host.nodes[l.b].parent == l.a &&
         isTreeLinked(host.nodes[l.b].type);
}

ordered_json nodeToJson(const HostTopology& host, int index) {
  const Node& n = host.nodes[index];
  ordered_json j;
  j["id"] = n.id;
  j["type"] = nodeTypeName(n.type);
  if (n.parent > 0) j["parent"] = host.nodes[n.parent].id;
  if (!n.name.empty()) j["name"] = n.name;
  switch (n.type) {
    case NodeType::kPackage:
    case NodeType::kNuma:
      if (n.osIndex >= 0) j["os_index"] = n.osIndex;
      if (!n.vendor.empty()) j["vendor"] = n.vendor;
      if (n.memoryBytes > 0) j["memory_gb"] = static_cast<double>(n.memoryBytes) / kGiB;
      j["cores"] = n.cores;
      j["pus"] = n.pus;
      break;
    case NodeType::kPciSwitch:
      if (!n.busId.empty()) j["busid"] = n.busId;
      break;
    case NodeType::kGpu:
      if (!n.busId.empty()) j["busid"] = n.busId;
      if (n.osIndex >= 0) j["dev"] = n.osIndex;
      if (n.sm > 0) j["sm"] = n.sm;
      if (n.memoryBytes > 0) j["memory_gb"] = static_cast<double>(n.memoryBytes) / kGiB;
      break;
    case NodeType::kNic:
      if (!n.busId.empty()) j["busid"] = n.busId;
      if (n.osIndex >= 0) j["dev"] = n.osIndex;
      j["kind"] = netKindName(n.netKind);
      j["speed_gbps"] = n.speedGbps;
      j["port"] = n.port;
      if (!n.guid.empty()) j["guid"] = n.guid;
      if (!n.netdev.empty()) j["netdev"] = n.netdev;
      j["gdr"] = n.gdr;
      break;
    case NodeType::kMachine:
    case NodeType::kNvswitch:
      break;
  }
  for (const Link& l : host.links) {
    if (l.b == index && isTreeLink(host, l)) {
      j["link"] = linkToJson(l);
      break;
    }
  }
  return j;
}

}  // namespace

ordered_json hostToJson(const HostTopology& host) {
  ordered_json j;
  j["id"] = host.id;
  if (!host.hostname.empty()) j["hostname"] = host.hostname;
  ordered_json nodes = ordered_json::array();
  for (size_t i = 1; i < host.nodes.size(); ++i) nodes.push_back(nodeToJson(host, static_cast<int>(i)));
  j["nodes"] = std::move(nodes);
  ordered_json links = ordered_json::array();
  for (const Link& l : host.links) {
    if (isTreeLink(host, l)) continue;
    ordered_json entry = {{"a", host.nodes[l.a].id}, {"b", host.nodes[l.b].id}};
    const ordered_json fields = linkToJson(l);  // named: items() of a temporary would dangle
    for (auto& [key, value] : fields.items()) entry[key] = value;
    links.push_back(std::move(entry));
  }
  j["links"] = std::move(links);
  return j;
}

ordered_json jobToJson(const JobTopology& job) {
  ordered_json j;
  j["version"] = kTopoJsonVersion;
  if (!job.name.empty()) j["name"] = job.name;
  if (!job.description.empty()) j["description"] = job.description;
  ordered_json net;
  net["kind"] = netKindName(job.network.kind);
  if (job.network.speedGbps > 0) net["speed_gbps"] = job.network.speedGbps;
  net["latency_us"] = job.network.latencyUs >= 0 ? job.network.latencyUs : defaultNetLatencyUs(job.network.kind);
  j["network"] = std::move(net);
  ordered_json hosts = ordered_json::array();
  for (const HostTopology& h : job.hosts) hosts.push_back(hostToJson(h));
  j["hosts"] = std::move(hosts);
  ordered_json ranks = ordered_json::array();
  for (const RankPlacement& r : job.ranks) {
    ordered_json o = {{"host", r.host}};
    if (r.gpu >= 0) o["gpu"] = job.hosts[r.host].nodes[r.gpu].id;
    if (r.numa >= 0) o["numa"] = job.hosts[r.host].nodes[r.numa].id;
    if (r.nic >= 0) o["nic"] = job.hosts[r.host].nodes[r.nic].id;
    ranks.push_back(std::move(o));
  }
  j["ranks"] = std::move(ranks);
  return j;
}

std::string dumpJobJson(const JobTopology& job) {
  // nlohmann's indented output puts every field on its own line (a DGX becomes a thousand lines); one node, link or
  // rank per line reads better and diffs as well.
  const ordered_json j = jobToJson(job);
  std::string out = "{\n";
  auto field = [&out](const char* indent, const std::string& key, const ordered_json& value, bool last) {
    out += indent + ordered_json(key).dump() + ": " + value.dump() + (last ? "\n" : ",\n");
  };
  auto list = [&out](const char* indent, const std::string& key, const ordered_json& arr, const char* itemIndent,
                     bool last) {
    out += indent + ordered_json(key).dump() + ": [";
    for (size_t i = 0; i < arr.size(); ++i) out += (i ? ",\n" : "\n") + std::string(itemIndent) + arr[i].dump();
    out += arr.empty() ? "]" : std::string("\n") + indent + "]";
    out += last ? "\n" : ",\n";
  };
  for (const char* key : {"version", "name", "description", "network"}) {
    if (j.contains(key)) field("  ", key, j[key], false);
  }
  out += "  \"hosts\": [\n";
  for (size_t h = 0; h < j["hosts"].size(); ++h) {
    const ordered_json& host = j["hosts"][h];
    out += "    {\n";
    field("      ", "id", host["id"], false);
    if (host.contains("hostname")) field("      ", "hostname", host["hostname"], false);
    list("      ", "nodes", host["nodes"], "        ", false);
    list("      ", "links", host["links"], "        ", true);
    out += h + 1 < j["hosts"].size() ? "    },\n" : "    }\n";
  }
  out += "  ],\n";
  list("  ", "ranks", j["ranks"], "    ", true);
  out += "}\n";
  return out;
}

}  // namespace tern::topo
