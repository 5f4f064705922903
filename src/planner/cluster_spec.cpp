#include "planner/cluster_spec.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "base/error.hpp"
#include "planner/units.hpp"

namespace tern::planner {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

ClusterSpec gpuSpec(int nodes, int gpus, IntraKind intra, int nvVersion, int nvCount, int pcieGen, int perSwitch,
                    int sm, const char* gpuName, topo::NetKind kind, double gbps, int nics) {
  ClusterSpec s;
  s.nodes = nodes;
  s.ranksPerNode = gpus;
  s.intra = intra;
  s.nvlinkVersion = nvVersion;
  s.nvlinkCount = nvCount;
  s.pcieGen = pcieGen;
  s.gpusPerSwitch = perSwitch;
  s.gpuSm = sm;
  s.gpuName = gpuName;
  s.netKind = kind;
  s.netGbps = gbps;
  s.nicsPerNode = nics;
  return s;
}

ClusterSpec cpuSpec(int nodes, int ranks, IntraKind intra, topo::NetKind kind, double gbps) {
  ClusterSpec s;
  s.nodes = nodes;
  s.ranksPerNode = ranks;
  s.intra = intra;
  s.netKind = kind;
  s.netGbps = gbps;
  return s;
}

using topo::NetKind;
using topo::NodeType;

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> kPresets = {
      {"dgx-h100", "2 x DGX H100: 8 H100 per node on NVSwitch (NVLink4 x18), 8 x NDR 400 Gb/s InfiniBand",
       gpuSpec(2, 8, IntraKind::kNvlink, 4, 18, 5, 1, 90, "H100-SXM5", NetKind::kInfiniband, 400, 8)},
      {"dgx-h100x4-ndr", "4 x DGX H100 (32 GPUs), NDR 400 Gb/s InfiniBand, a NIC per GPU",
       gpuSpec(4, 8, IntraKind::kNvlink, 4, 18, 5, 1, 90, "H100-SXM5", NetKind::kInfiniband, 400, 8)},
      {"dgx-a100", "2 x DGX A100: 8 A100 per node on NVSwitch (NVLink3 x12), 8 x HDR 200 Gb/s InfiniBand",
       gpuSpec(2, 8, IntraKind::kNvlink, 3, 12, 4, 1, 80, "A100-SXM4", NetKind::kInfiniband, 200, 8)},
      {"pcie4x8-roce100", "2 nodes x 8 PCIe Gen4 GPUs (2 per switch, no NVLink), one 100 Gb/s RoCE NIC per node",
       gpuSpec(2, 8, IntraKind::kPcie, 0, 0, 4, 2, 80, "A100-PCIE", NetKind::kRoce, 100, 1)},
      {"pcie-4gpu-100g", "2 nodes x 4 PCIe Gen4 GPUs (2 per switch), one 100 Gb/s RoCE NIC per node",
       gpuSpec(2, 4, IntraKind::kPcie, 0, 0, 4, 2, 80, "A100-PCIE", NetKind::kRoce, 100, 1)},
      {"roce25-2x2", "the worked case: 2 nodes x 2 V100 PCIe Gen3 (CPU root ports), RoCE v2 25 Gb/s",
       gpuSpec(2, 2, IntraKind::kPcie, 0, 0, 3, 0, 70, "V100-PCIE", NetKind::kRoce, 25, 1)},
      {"roce10-2x2", "the worked case on 10 Gb/s Ethernet with RoCE: 2 nodes x 2 V100 PCIe Gen3",
       gpuSpec(2, 2, IntraKind::kPcie, 0, 0, 3, 0, 70, "V100-PCIE", NetKind::kRoce, 10, 1)},
      {"cpu-2node-1g", "2 CPU nodes x 2 ranks (shared memory inside a node), 1 Gb/s Ethernet (TCP)",
       cpuSpec(2, 2, IntraKind::kShm, NetKind::kEthernet, 1)},
      {"cpu-2node-1g-tcp", "2 CPU nodes x 2 ranks over TCP only (TERN_SHM_DISABLE=1), 1 Gb/s Ethernet",
       cpuSpec(2, 2, IntraKind::kLoopback, NetKind::kEthernet, 1)},
      {"cpu-2x1-1g", "2 CPU nodes x 1 rank, 1 Gb/s Ethernet (TCP)",
       cpuSpec(2, 1, IntraKind::kShm, NetKind::kEthernet, 1)},
      {"shm-2", "one host, 2 CPU ranks over shared memory", cpuSpec(1, 2, IntraKind::kShm, NetKind::kEthernet, 10)},
      {"loopback-2", "one host, 2 CPU ranks over TCP loopback (TERN_SHM_DISABLE=1)",
       cpuSpec(1, 2, IntraKind::kLoopback, NetKind::kEthernet, 10)},
  };
  return kPresets;
}

ClusterSpec presetSpec(std::string_view name) {
  const std::string n = lower(name);
  for (const Preset& p : presets()) {
    if (n == p.name) return p.spec;
  }
  const size_t x = n.rfind('x');
  if (x != std::string::npos && x + 1 < n.size() &&
      std::all_of(n.begin() + static_cast<long>(x) + 1, n.end(), [](unsigned char c) { return std::isdigit(c); })) {
    for (const Preset& p : presets()) {
      if (n.substr(0, x) == p.name) {
        ClusterSpec s = p.spec;
        s.nodes = std::stoi(n.substr(x + 1));
        if (s.nodes < 1 || s.nodes > 100000) throwError(ternInvalidArgument, "preset %s: bad node count", n.c_str());
        return s;
      }
    }
  }
  std::string names;
  for (const Preset& p : presets()) names += std::string(names.empty() ? "" : ", ") + p.name;
  throwError(ternInvalidArgument, "unknown preset '%s' (known: %s; see --list)", std::string(name).c_str(),
             names.c_str());
}

IntraKind parseIntra(std::string_view s, ClusterSpec& spec) {
  const std::string v = lower(s);
  if (v == "shm") return spec.intra = IntraKind::kShm;
  if (v == "loopback" || v == "tcp") return spec.intra = IntraKind::kLoopback;
  if (v.rfind("nvlink", 0) == 0) {
    const std::string ver = v.substr(6);
    spec.nvlinkVersion = ver.empty() ? 4 : (ver.size() == 1 && ver[0] >= '1' && ver[0] <= '5' ? ver[0] - '0' : -1);
    if (spec.nvlinkVersion < 0) throwError(ternInvalidArgument, "--intra %s: unknown NVLink version", v.c_str());
    static const std::map<int, std::pair<int, int>> kGpu = {
        {1, {4, 60}}, {2, {6, 70}}, {3, {12, 80}}, {4, {18, 90}}, {5, {18, 100}}};
    spec.nvlinkCount = kGpu.at(spec.nvlinkVersion).first;
    spec.gpuSm = kGpu.at(spec.nvlinkVersion).second;
    spec.gpusPerSwitch = 1;
    return spec.intra = IntraKind::kNvlink;
  }
  if (v.rfind("pcie", 0) == 0) {
    const std::string gen = v.substr(4);
    spec.pcieGen = gen.empty() ? 4 : (gen.size() == 1 && gen[0] >= '1' && gen[0] <= '6' ? gen[0] - '0' : -1);
    if (spec.pcieGen < 0) throwError(ternInvalidArgument, "--intra %s: unknown PCIe generation", v.c_str());
    return spec.intra = IntraKind::kPcie;
  }
  throwError(ternInvalidArgument, "--intra '%s': expected shm, loopback, nvlink[2-5] or pcie[3-5]",
             std::string(s).c_str());
}

void parseInter(std::string_view s, ClusterSpec& spec) {
  const std::string v = lower(s);
  const size_t colon = v.find(':');
  const std::string kind = v.substr(0, colon);
  const std::string speed = colon == std::string::npos ? "" : v.substr(colon + 1);
  if (kind == "tcp") {
    spec.netKind = NetKind::kEthernet;
  } else if (auto k = topo::parseNetKind(kind)) {
    spec.netKind = *k;
  } else {
    throwError(ternInvalidArgument, "--inter '%s': unknown network kind '%s' (roce, ib, eth)", std::string(s).c_str(),
               kind.c_str());
  }
  static const std::map<std::string, double> kIb = {{"sdr", 10},  {"ddr", 20},  {"qdr", 40},  {"fdr", 56},
                                                    {"edr", 100}, {"hdr", 200}, {"ndr", 400}, {"xdr", 800}};
  if (speed.empty()) {
    if (spec.netKind != NetKind::kInfiniband) {
      throwError(ternInvalidArgument, "--inter '%s': give a speed, e.g. %s:25gbit", std::string(s).c_str(),
                 kind.c_str());
    }
    spec.netGbps = 400;
    return;
  }
  if (auto it = kIb.find(speed); it != kIb.end()) {
    spec.netGbps = it->second;
    return;
  }
  spec.netGbps = parseRate(speed, RateDefault::kBits) * 8 / 1e9;
}

IntraTransport intraTransportOf(const ClusterSpec& spec) {
  return spec.intra == IntraKind::kLoopback ? IntraTransport::kLoopback : IntraTransport::kTopology;
}

std::string describe(const ClusterSpec& spec) {
  std::string intra;
  switch (spec.intra) {
    case IntraKind::kShm:
      intra = "shared memory";
      break;
    case IntraKind::kLoopback:
      intra = "TCP loopback";
      break;
    case IntraKind::kNvlink:
      intra = format("NVLink%d x%d", spec.nvlinkVersion, spec.nvlinkCount);
      break;
    case IntraKind::kPcie:
      intra = format("PCIe Gen%d", spec.pcieGen);
      break;
  }
  std::string out =
      format("%d node%s x %d rank%s (%d ranks), intra %s", spec.nodes, spec.nodes == 1 ? "" : "s", spec.ranksPerNode,
             spec.ranksPerNode == 1 ? "" : "s", spec.nodes * spec.ranksPerNode, intra.c_str());
  if (spec.nodes > 1) {
    out += format(", inter %s %s (%d NIC%s per node)", topo::netKindName(spec.netKind),
                  formatLineRate(spec.netGbps * 1e9 / 8).c_str(), spec.nicsPerNode, spec.nicsPerNode == 1 ? "" : "s");
  }
  return out;
}

namespace {

topo::HostTopology cpuHost(const std::string& id, topo::NetKind kind, double gbps) {
  topo::HostTopology h;
  h.id = id;
  h.hostname = id;
  topo::Node pkg;
  pkg.type = NodeType::kPackage;
  pkg.id = "pkg0";
  pkg.parent = 0;
  pkg.osIndex = 0;
  const int p = h.addNode(pkg);
  topo::Node numa;
  numa.type = NodeType::kNuma;
  numa.id = "numa0";
  numa.parent = p;
  numa.osIndex = 0;
  const int m = h.addNode(numa);
  h.addLink({p, m, topo::LinkType::kMemory});
  topo::Node nic;
  nic.type = NodeType::kNic;
  nic.id = "nic0";
  nic.parent = p;
  nic.netKind = kind;
  nic.speedGbps = gbps;
  nic.name = "eth0";
  const int n = h.addNode(nic);
  h.addLink({p, n, topo::LinkType::kPcie, 0, 0, 3, 4});
  topo::completeHost(h);
  return h;
}

topo::HostTopology gpuHost(const std::string& id, const ClusterSpec& s) {
  topo::HostTopology h;
  h.id = id;
  h.hostname = id;
  const int g = s.ranksPerNode;
  const int numPkgs = std::max(1, (g + 3) / 4);
  std::vector<int> pkgs;
  for (int i = 0; i < numPkgs; ++i) {
    topo::Node pkg;
    pkg.type = NodeType::kPackage;
    pkg.id = format("pkg%d", i);
    pkg.parent = 0;
    pkg.osIndex = i;
    pkgs.push_back(h.addNode(pkg));
    topo::Node numa;
    numa.type = NodeType::kNuma;
    numa.id = format("numa%d", i);
    numa.parent = pkgs.back();
    numa.osIndex = i;
    const int m = h.addNode(numa);
    h.addLink({pkgs.back(), m, topo::LinkType::kMemory});
  }
  const int perPkg = (g + numPkgs - 1) / numPkgs;
  std::vector<int> attach(g);  // the node each GPU's PCIe link goes to
  std::map<int, int> switches;
  for (int i = 0; i < g; ++i) {
    const int pkg = pkgs[std::min(numPkgs - 1, i / perPkg)];
    if (s.gpusPerSwitch <= 0) {
      attach[i] = pkg;
      continue;
    }
    const int sw = i / s.gpusPerSwitch;
    if (!switches.count(sw)) {
      topo::Node node;
      node.type = NodeType::kPciSwitch;
      node.id = format("sw%d", sw);
      node.parent = pkg;
      const int idx = h.addNode(node);
      h.addLink({pkg, idx, topo::LinkType::kPcie, 0, 0, s.pcieGen, 16});
      switches[sw] = idx;
    }
    attach[i] = switches[sw];
  }
  int nvs = -1;
  if (s.intra == IntraKind::kNvlink) {
    topo::Node node;
    node.type = NodeType::kNvswitch;
    node.id = "nvs0";
    node.parent = 0;
    nvs = h.addNode(node);
  }
  for (int i = 0; i < g; ++i) {
    topo::Node gpu;
    gpu.type = NodeType::kGpu;
    gpu.id = format("gpu%d", i);
    gpu.parent = attach[i];
    gpu.osIndex = i;
    gpu.sm = s.gpuSm;
    gpu.name = s.gpuName;
    gpu.busId = format("0000:%02x:00.0", 0x10 + i);
    const int idx = h.addNode(gpu);
    h.addLink({attach[i], idx, topo::LinkType::kPcie, 0, 0, s.pcieGen, 16});
    if (nvs >= 0) {
      topo::Link l{idx, nvs, topo::LinkType::kNvlink};
      l.nvlinkCount = s.nvlinkCount;
      l.nvlinkVersion = s.nvlinkVersion;
      h.addLink(l);
    }
  }
  const int nics = std::max(1, s.nicsPerNode);
  for (int j = 0; j < nics; ++j) {
    const int nearGpu = std::min(g - 1, j * g / nics);
    topo::Node nic;
    nic.type = NodeType::kNic;
    nic.id = format("nic%d", j);
    nic.parent = attach[nearGpu];
    nic.osIndex = j;
    nic.netKind = s.netKind;
    nic.speedGbps = s.netGbps;
    nic.name = format("mlx5_%d", j);
    nic.busId = format("0000:%02x:00.0", 0x80 + j);
    nic.gdr = true;
    const int idx = h.addNode(nic);
    h.addLink({attach[nearGpu], idx, topo::LinkType::kPcie, 0, 0, s.pcieGen, 16});
  }
  topo::completeHost(h);
  return h;
}

}  // namespace

topo::JobTopology buildCluster(const ClusterSpec& s, const std::string& name) {
  if (s.nodes < 1 || s.ranksPerNode < 1) {
    throwError(ternInvalidArgument, "a cluster needs at least one node and one rank per node");
  }
  if (static_cast<long>(s.nodes) * s.ranksPerNode > 1000000) {
    throwError(ternInvalidArgument, "%d x %d ranks is more than this calculator handles", s.nodes, s.ranksPerNode);
  }
  topo::JobTopology job;
  job.name = name;
  job.description = describe(s);
  const bool gpus = s.intra == IntraKind::kNvlink || s.intra == IntraKind::kPcie;
  for (int k = 0; k < s.nodes; ++k) {
    const std::string id = format("%s-%d", name.c_str(), k);
    job.hosts.push_back(gpus ? gpuHost(id, s) : cpuHost(id, s.netKind, s.netGbps));
    const topo::HostTopology& h = job.hosts.back();
    const std::vector<int> gpuNodes = h.nodesOfType(NodeType::kGpu);
    const int numa = h.nodesOfType(NodeType::kNuma).front();
    for (int r = 0; r < s.ranksPerNode; ++r) {
      topo::RankPlacement p;
      p.host = k;
      p.gpu = gpus ? gpuNodes[r] : -1;
      p.numa = gpus ? -1 : numa;
      job.ranks.push_back(p);
    }
  }
  job.network.kind = s.netKind;
  job.network.speedGbps = s.netGbps;
  job.network.latencyUs = s.netLatencyUs;
  return job;
}

topo::JobTopology jobFromHostIds(const std::vector<std::string>& hostIds) {
  topo::JobTopology job;
  job.name = "communicator";
  std::map<std::string, int> index;
  for (const std::string& id : hostIds) {
    auto [it, fresh] = index.emplace(id, static_cast<int>(job.hosts.size()));
    if (fresh) job.hosts.push_back(cpuHost(id.empty() ? "host" : id, NetKind::kEthernet, -1));
    topo::RankPlacement p;
    p.host = it->second;
    p.numa = job.hosts[p.host].nodesOfType(NodeType::kNuma).front();
    job.ranks.push_back(p);
  }
  job.network.kind = NetKind::kEthernet;
  return job;
}

}  // namespace tern::planner
