// Synthetic topologies: uniform clusters described by a few numbers (tern-calc's presets and --nodes/--intra/
// --inter flags), and the job a communicator without a topology file knows about (its host ids only).
//
// A GPU host gets one package per 4 GPUs (one NUMA node each), GPUs behind PCIe switches (gpusPerSwitch of them per
// switch; 0 = on CPU root ports), an NVSwitch fabric when the intra link is NVLink, and its NICs spread over the
// GPUs' switches (a NIC per GPU, as on a DGX, puts each GPU next to its own NIC). A CPU host is one package with one
// NUMA node and one NIC; its ranks are bound to that NUMA node.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "planner/model_link.hpp"
#include "topo/topology.hpp"

namespace tern::planner {

enum class IntraKind { kShm, kLoopback, kNvlink, kPcie };

struct ClusterSpec {
  int nodes = 2;
  int ranksPerNode = 2;
  IntraKind intra = IntraKind::kShm;
  int nvlinkVersion = 4;  // NVLink: version and links per GPU (H100: 4 x 18 = 450 GB/s per direction)
  int nvlinkCount = 18;
  int pcieGen = 4;        // GPUs' and NICs' PCIe generation (x16)
  int gpusPerSwitch = 2;  // 0: GPUs on CPU root ports
  int gpuSm = 80;
  std::string gpuName = "GPU";
  topo::NetKind netKind = topo::NetKind::kEthernet;
  double netGbps = 1;
  int nicsPerNode = 1;
  double netLatencyUs = -1;  // -1: the kind's default
};

struct Preset {
  const char* name;
  const char* description;
  ClusterSpec spec;
};

const std::vector<Preset>& presets();

// A preset by name; "<preset>x<N>" sets the node count (dgx-h100x8, roce25-2x2x4). Throws
// Error(ternInvalidArgument, "unknown preset ...") listing the names.
ClusterSpec presetSpec(std::string_view name);

// "--intra" values: shm, loopback (or tcp), nvlink2..5 (or nvlink = nvlink4), pcie3..5 (or pcie = pcie4).
IntraKind parseIntra(std::string_view s, ClusterSpec& spec);
// "--inter" values: KIND:SPEED with KIND roce | ib | eth (ethernet, tcp) and SPEED a rate (25gbit, 25Gb/s,
// 100G, 3.125GB/s) or an InfiniBand generation (edr, hdr, ndr, xdr); "ib" alone is NDR.
void parseInter(std::string_view s, ClusterSpec& spec);

topo::JobTopology buildCluster(const ClusterSpec& spec, const std::string& name = "cluster");
// How same-host ranks of a spec talk (loopback for IntraKind::kLoopback, the topology's paths otherwise).
IntraTransport intraTransportOf(const ClusterSpec& spec);
// One line: "2 nodes x 2 ranks, intra pcie3, inter roce 25 Gb/s (1 NIC per node)".
std::string describe(const ClusterSpec& spec);

// The job of a communicator that knows only its ranks' host ids: hosts in order of first appearance, CPU ranks, an
// Ethernet NIC of unknown speed per host (10 Gb/s, the usual assumption).
topo::JobTopology jobFromHostIds(const std::vector<std::string>& hostIds);

}  // namespace tern::planner
