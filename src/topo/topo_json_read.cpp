// Reading the JSON topology format (schema in topo_json.hpp). Every error names the file and the place in it.
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.hpp"
#include "topo/topo_json.hpp"

namespace tern::topo {

using nlohmann::json;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error(ternInvalidArgument, where + ": " + what);
}

// Unknown fields are refused so that a typo ("speed_gpbs") does not silently become a default; fields starting with
// '_' are free for comments.
void checkKeys(const json& o, const std::string& where, std::initializer_list<const char*> allowed) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& key = it.key();
    if (!key.empty() && key[0] == '_') continue;
    bool ok = false;
    for (const char* a : allowed) ok |= key == a;
    if (!ok) fail(where, "unknown field \"" + key + "\"");
  }
}

const json& requireObject(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "must be an object");
  return j;
}

std::string getString(const json& o, const char* key, const std::string& where, const std::string& def = "") {
  auto it = o.find(key);
  if (it == o.end()) return def;
  if (!it->is_string()) fail(where, format("\"%s\" must be a string", key));
  return it->get<std::string>();
}

double getNumber(const json& o, const char* key, const std::string& where, double def) {
  auto it = o.find(key);
  if (it == o.end()) return def;
  if (!it->is_number()) fail(where, format("\"%s\" must be a number", key));
  double v = it->get<double>();
  if (!std::isfinite(v)) fail(where, format("\"%s\" must be finite", key));
  return v;
}

int getInt(const json& o, const char* key, const std::string& where, int def) {
  auto it = o.find(key);
  if (it == o.end()) return def;
  if (!it->is_number_integer()) fail(where, format("\"%s\" must be an integer", key));
  long long v = it->get<long long>();
  if (v < -1 || v > (1LL << 30)) fail(where, format("\"%s\" out of range", key));
  return static_cast<int>(v);
}

bool getBool(const json& o, const char* key, const std::string& where, bool def) {
  auto it = o.find(key);
  if (it == o.end()) return def;
  if (!it->is_boolean()) fail(where, format("\"%s\" must be true or false", key));
  return it->get<bool>();
}

double getNonNegative(const json& o, const char* key, const std::string& where, double def) {
  double v = getNumber(o, key, where, def);
  if (v < 0 && v != def) fail(where, format("\"%s\" must be >= 0", key));
  return v;
}

NetKind getNetKind(const json& o, const std::string& where, NetKind def) {
  if (!o.contains("kind")) return def;
  std::string s = getString(o, "kind", where);
  std::optional<NetKind> k = parseNetKind(s);
  if (!k) fail(where, "unknown network kind \"" + s + "\" (ib, roce, ethernet, unknown)");
  return *k;
}

// Fills a link's type-specific fields from a JSON object (a node's "link" or an entry of "links").
void readLinkFields(const json& o, const std::string& where, Link* l) {
  l->pcieGen = getInt(o, "gen", where, 0);
  l->pcieWidth = getInt(o, "width", where, 0);
  l->nvlinkCount = getInt(o, "count", where, 0);
  l->nvlinkVersion = getInt(o, "version", where, 0);
  if (l->pcieGen < 0 || l->pcieGen > 6) fail(where, "PCIe \"gen\" must be 1-6");
  if (l->pcieWidth < 0 || l->pcieWidth > 32) fail(where, "PCIe \"width\" must be 1-32");
  if (l->nvlinkCount < 0 || l->nvlinkVersion < 0 || l->nvlinkVersion > 5) fail(where, "bad NVLink count/version");
  l->bandwidth = getNumber(o, "bandwidth", where, 0);
  l->latencyUs = getNumber(o, "latency_us", where, 0);
  if (l->bandwidth < 0) fail(where, "\"bandwidth\" must be > 0");
  if (l->latencyUs < 0) fail(where, "\"latency_us\" must be >= 0");
}

LinkType readLinkType(const json& o, const std::string& where, LinkType def, bool required) {
  if (!o.contains("type")) {
    if (required) fail(where, "missing \"type\"");
    return def;
  }
  std::string s = getString(o, "type", where);
  std::optional<LinkType> t = parseLinkType(s);
  if (!t || *t == LinkType::kNet) fail(where, "unknown link type \"" + s + "\" (memory, pcie, nvlink, smp)");
  return *t;
}

void readNodeFields(const json& o, const std::string& where, Node* n) {
  switch (n->type) {
    case NodeType::kPackage:
      checkKeys(o, where, {"id", "type", "parent", "name", "os_index", "vendor", "cores", "pus"});
      break;
    case NodeType::kNuma:
      checkKeys(o, where, {"id", "type", "parent", "link", "name", "os_index", "memory_gb", "cores", "pus"});
      break;
    case NodeType::kPciSwitch:
      checkKeys(o, where, {"id", "type", "parent", "link", "name", "busid"});
      break;
    case NodeType::kGpu:
      checkKeys(o, where, {"id", "type", "parent", "link", "name", "busid", "dev", "sm", "memory_gb"});
      break;
    case NodeType::kNic:
      checkKeys(o, where,
                {"id", "type", "parent", "link", "name", "busid", "dev", "kind", "speed_gbps", "port", "guid", "netdev",
                 "gdr"});
      break;
    case NodeType::kNvswitch:
      checkKeys(o, where, {"id", "type", "parent", "name"});
      break;
    case NodeType::kMachine:
      fail(where, "the machine node is implicit");
  }
  n->name = getString(o, "name", where);
  n->osIndex = getInt(o, n->type == NodeType::kGpu || n->type == NodeType::kNic ? "dev" : "os_index", where, -1);
  n->busId = o.contains("busid") ? normalizeBusId(getString(o, "busid", where)) : "";
  n->vendor = getString(o, "vendor", where);
  n->cores = getInt(o, "cores", where, 0);
  n->pus = getInt(o, "pus", where, 0);
  if (n->cores < 0 || n->pus < 0) fail(where, "\"cores\" and \"pus\" must be >= 0");
  double gb = getNonNegative(o, "memory_gb", where, 0);
  n->memoryBytes = static_cast<uint64_t>(std::llround(gb * kGiB));
  n->sm = getInt(o, "sm", where, 0);
  n->netKind = getNetKind(o, where, n->type == NodeType::kNic ? NetKind::kEthernet : NetKind::kUnknown);
  n->speedGbps = getNumber(o, "speed_gbps", where, -1);
  if (n->speedGbps <= 0 && n->speedGbps != -1) fail(where, "\"speed_gbps\" must be > 0 (or -1 for unknown)");
  n->port = getInt(o, "port", where, n->type == NodeType::kNic ? 1 : 0);
  n->guid = getString(o, "guid", where);
  n->netdev = getString(o, "netdev", where);
  n->gdr = getBool(o, "gdr", where, false);
}

bool isTreeLinked(NodeType t) {
  return t == NodeType::kNuma || t == NodeType::kPciSwitch || t == NodeType::kGpu || t == NodeType::kNic;
}

// Rank placement from the compact form {"per_host": N, "bind": "gpu" | "numa" | "none"}.
std::vector<RankPlacement> ranksPerHost(const json& o, const std::vector<HostTopology>& hosts,
                                        const std::string& where) {
  checkKeys(o, where, {"per_host", "bind"});
  if (!o.contains("per_host")) fail(where, "missing \"per_host\"");
  const int perHost = getInt(o, "per_host", where, 0);
  if (perHost < 1) fail(where, "\"per_host\" must be >= 1");
  bool anyGpu = false;
  for (const HostTopology& h : hosts) anyGpu |= h.count(NodeType::kGpu) > 0;
  const std::string bind = getString(o, "bind", where, anyGpu ? "gpu" : "none");
  if (bind != "gpu" && bind != "numa" && bind != "none") fail(where, "\"bind\" must be gpu, numa or none");
  std::vector<RankPlacement> ranks;
  for (size_t h = 0; h < hosts.size(); ++h) {
    const std::vector<int> gpus = hosts[h].nodesOfType(NodeType::kGpu);
    const std::vector<int> numas = hosts[h].nodesOfType(NodeType::kNuma);
    if (bind == "gpu" && static_cast<int>(gpus.size()) < perHost) {
      fail(where, format("per_host %d with bind gpu, but host \"%s\" has %zu GPUs", perHost, hosts[h].id.c_str(),
                         gpus.size()));
    }
    if (bind == "numa" && numas.empty()) fail(where, "bind numa, but host \"" + hosts[h].id + "\" has no NUMA node");
    for (int i = 0; i < perHost; ++i) {
      RankPlacement p{static_cast<int>(h), -1, -1};
      if (bind == "gpu") p.gpu = gpus[i];
      if (bind == "numa") p.numa = numas[i % numas.size()];
      ranks.push_back(p);
    }
  }
  return ranks;
}

std::vector<RankPlacement> rankList(const json& arr, const std::vector<HostTopology>& hosts, const std::string& where) {
  std::vector<RankPlacement> ranks;
  for (size_t r = 0; r < arr.size(); ++r) {
    const std::string at = format("%s: ranks[%zu]", where.c_str(), r);
    const json& o = requireObject(arr[r], at);
    checkKeys(o, at, {"host", "gpu", "numa", "nic"});
    RankPlacement p;
    auto host = o.find("host");
    if (host == o.end()) fail(at, "missing \"host\"");
    if (host->is_number_integer()) {
      long long h = host->get<long long>();
      if (h < 0 || h >= static_cast<long long>(hosts.size())) fail(at, format("host %lld out of range", h));
      p.host = static_cast<int>(h);
    } else if (host->is_string()) {
      for (size_t h = 0; h < hosts.size(); ++h) {
        if (hosts[h].id == host->get<std::string>()) p.host = static_cast<int>(h);
      }
      if (p.host < 0) fail(at, "unknown host \"" + host->get<std::string>() + "\"");
    } else {
      fail(at, "\"host\" must be a host index or id");
    }
    const HostTopology& h = hosts[p.host];
    for (auto [key, type, out] :
         {std::tuple{"gpu", NodeType::kGpu, &p.gpu}, std::tuple{"numa", NodeType::kNuma, &p.numa},
          std::tuple{"nic", NodeType::kNic, &p.nic}}) {
      if (!o.contains(key)) continue;
      std::string id = getString(o, key, at);
      *out = h.find(id);
      if (*out < 0 || h.nodes[*out].type != type) {
        fail(at, format("\"%s\" is not a %s of host \"%s\"", id.c_str(), nodeTypeName(type), h.id.c_str()));
      }
    }
    ranks.push_back(p);
  }
  return ranks;
}

}  // namespace

HostTopology hostFromJson(const json& j, const std::string& where) {
  requireObject(j, where);
  checkKeys(j, where, {"id", "hostname", "count", "nodes", "links"});
  HostTopology host;
  host.id = getString(j, "id", where);
  if (host.id.empty()) fail(where, "missing \"id\"");
  host.hostname = getString(j, "hostname", where);
  auto nodes = j.find("nodes");
  if (nodes == j.end() || !nodes->is_array()) fail(where, "\"nodes\" must be an array");

  // First pass: nodes and ids; second pass: parents (which may come later in the list) and parent links.
  std::vector<std::string> parents;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json& o = (*nodes)[i];
    std::string at = format("%s.nodes[%zu]", where.c_str(), i);
    requireObject(o, at);
    Node n;
    n.id = getString(o, "id", at);
    if (n.id.empty()) fail(at, "missing \"id\"");
    at += " (\"" + n.id + "\")";
    if (host.find(n.id) >= 0) fail(at, "duplicate id");
    std::string type = getString(o, "type", at);
    if (!parseNodeType(type, &n.type)) {
      fail(at, "unknown type \"" + type + "\" (package, numa, pci_switch, gpu, nic, nvswitch)");
    }
    readNodeFields(o, at, &n);
    parents.push_back(getString(o, "parent", at));
    host.addNode(n);
  }
  int firstPackage = -1;
  for (size_t i = 1; i < host.nodes.size(); ++i) {
    if (host.nodes[i].type == NodeType::kPackage && firstPackage < 0) firstPackage = static_cast<int>(i);
  }
  if (firstPackage < 0) {
    Node pkg;
    pkg.type = NodeType::kPackage;
    pkg.id = host.find("pkg0") < 0 ? "pkg0" : "pkg0-implicit";
    pkg.parent = 0;
    pkg.osIndex = 0;
    firstPackage = host.addNode(pkg);
  }
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json& o = (*nodes)[i];
    const int index = static_cast<int>(i) + 1;
    Node& n = host.nodes[index];
    const std::string at = format("%s.nodes[%zu] (\"%s\")", where.c_str(), i, n.id.c_str());
    if (parents[i].empty()) {
      n.parent = isTreeLinked(n.type) ? firstPackage : 0;
    } else {
      n.parent = host.find(parents[i]);
      if (n.parent < 0) fail(at, "unknown parent \"" + parents[i] + "\"");
      const NodeType pt = host.nodes[n.parent].type;
      const bool ok =
          isTreeLinked(n.type) ? (pt == NodeType::kPackage || pt == NodeType::kPciSwitch) : pt == NodeType::kMachine;
      if (!ok || n.parent == index) {
        fail(at, format("a %s cannot be inside a %s", nodeTypeName(n.type), nodeTypeName(pt)));
      }
    }
    if (!isTreeLinked(n.type)) continue;
    Link l;
    l.a = n.parent;
    l.b = index;
    const LinkType def = n.type == NodeType::kNuma ? LinkType::kMemory : LinkType::kPcie;
    if (auto link = o.find("link"); link != o.end()) {
      const std::string lat = at + ".link";
      requireObject(*link, lat);
      checkKeys(*link, lat, {"type", "gen", "width", "bandwidth", "latency_us"});
      l.type = readLinkType(*link, lat, def, false);
      if (l.type != LinkType::kMemory && l.type != LinkType::kPcie) fail(lat, "a parent link is memory or pcie");
      readLinkFields(*link, lat, &l);
    } else {
      l.type = def;
    }
    host.addLink(l);
  }
  // Parent chains must end at the machine.
  for (size_t i = 1; i < host.nodes.size(); ++i) {
    int p = host.nodes[i].parent;
    for (size_t steps = 0; p > 0; p = host.nodes[p].parent) {
      if (++steps > host.nodes.size()) fail(where, "nodes[" + std::to_string(i - 1) + "]: parent chain loops");
    }
  }
  if (auto links = j.find("links"); links != j.end()) {
    if (!links->is_array()) fail(where, "\"links\" must be an array");
    for (size_t k = 0; k < links->size(); ++k) {
      const json& o = (*links)[k];
      const std::string at = format("%s.links[%zu]", where.c_str(), k);
      requireObject(o, at);
      checkKeys(o, at, {"a", "b", "type", "gen", "width", "count", "version", "bandwidth", "latency_us"});
      Link l;
      for (auto [key, end] : {std::pair{"a", &l.a}, std::pair{"b", &l.b}}) {
        std::string id = getString(o, key, at);
        *end = host.find(id);
        if (*end <= 0) fail(at, format("\"%s\": unknown node \"%s\"", key, id.c_str()));
      }
      if (l.a == l.b) fail(at, "a link needs two different nodes");
      l.type = readLinkType(o, at, LinkType::kPcie, true);
      readLinkFields(o, at, &l);
      host.addLink(l);
    }
  }
  completeHost(host);
  return host;
}

JobTopology jobFromJson(const json& j, const std::string& source) {
  requireObject(j, source);
  checkKeys(j, source, {"version", "name", "description", "network", "hosts", "ranks"});
  auto version = j.find("version");
  if (version == j.end()) fail(source, "missing \"version\" (this is not a tern topology file?)");
  if (!version->is_number_integer()) fail(source, "\"version\" must be an integer");
  if (version->get<long long>() < 1 || version->get<long long>() > kTopoJsonVersion) {
    fail(source,
         format("unsupported version %lld (this tern reads version %d)", version->get<long long>(), kTopoJsonVersion));
  }
  JobTopology job;
  job.name = getString(j, "name", source);
  job.description = getString(j, "description", source);
  auto hosts = j.find("hosts");
  if (hosts == j.end() || !hosts->is_array() || hosts->empty()) fail(source, "\"hosts\" must be a non-empty array");
  for (size_t h = 0; h < hosts->size(); ++h) {
    const std::string at = format("%s: hosts[%zu]", source.c_str(), h);
    const json& o = (*hosts)[h];
    HostTopology host = hostFromJson(o, at);
    const int count = getInt(o, "count", at, 1);
    if (count < 1) fail(at, "\"count\" must be >= 1");
    if (count == 1) {
      job.hosts.push_back(std::move(host));
      continue;
    }
    for (int i = 0; i < count; ++i) {
      HostTopology copy = host;
      copy.id = format("%s-%d", host.id.c_str(), i);
      if (!copy.hostname.empty()) copy.hostname = format("%s-%d", host.hostname.c_str(), i);
      job.hosts.push_back(std::move(copy));
    }
  }

  Network derived = deriveNetwork(job.hosts);
  if (auto net = j.find("network"); net != j.end()) {
    const std::string at = source + ": network";
    requireObject(*net, at);
    checkKeys(*net, at, {"kind", "speed_gbps", "latency_us"});
    job.network.kind = getNetKind(*net, at, derived.kind);
    job.network.speedGbps = getNumber(*net, "speed_gbps", at, derived.speedGbps);
    if (job.network.speedGbps <= 0 && job.network.speedGbps != -1) fail(at, "\"speed_gbps\" must be > 0");
    job.network.latencyUs = getNumber(*net, "latency_us", at, defaultNetLatencyUs(job.network.kind));
    if (job.network.latencyUs < 0) fail(at, "\"latency_us\" must be >= 0");
  } else {
    job.network = derived;
    job.network.latencyUs = defaultNetLatencyUs(derived.kind);
  }

  auto ranks = j.find("ranks");
  if (ranks == j.end()) {
    job.ranks = defaultRanks(job.hosts);
  } else if (ranks->is_array()) {
    job.ranks = rankList(*ranks, job.hosts, source);
  } else if (ranks->is_object()) {
    job.ranks = ranksPerHost(*ranks, job.hosts, source + ": ranks");
  } else {
    fail(source, "\"ranks\" must be a list of placements or {\"per_host\": N, \"bind\": ...}");
  }
  validate(job, source);
  return job;
}

JobTopology parseJobJson(std::string_view text, const std::string& source) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 3, column 5: ..."; keep the useful part.
    std::string what = e.what();
    size_t pos = what.find("parse error");
    fail(source, "invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  } catch (const json::exception& e) {
    // The parser also throws out_of_range (a number too large for any JSON number type) and others.
    fail(source, std::string("invalid JSON: ") + e.what());
  }
  return jobFromJson(j, source);
}

}  // namespace tern::topo
