// The topology model: each host is a small graph of nodes (machine, CPU packages, NUMA nodes, PCIe switches, GPUs,
// NICs, the NVSwitch fabric) joined by links; a job is a set of hosts, the ranks placed on them and the network
// between their NICs.
//
// A host graph has two overlaid structures:
//  - containment: every node but the machine (node 0) has a parent. Packages and the NVSwitch fabric hang off the
//    machine; NUMA nodes, PCIe switches and root-port devices hang off their package; devices behind a switch hang
//    off the switch. A PCIe switch here is what NCCL calls one: the upstream port together with its downstream ports.
//  - links: a node whose parent is a package or a switch is linked to it (memory link for NUMA nodes, PCIe for the
//    rest); NVLink and SMP links come on top. Paths (topo/paths.hpp) walk links only.
//
// The structs are plain data so that files, detection and tests can build them directly; call completeHost() once a
// host is built to add what every graph needs (defaults, SMP links between packages).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topo/link.hpp"

namespace tern::topo {

enum class NodeType : uint8_t {
  kMachine,    // the host itself, node 0
  kPackage,    // a CPU socket (or what NCCL calls a CPU: one NUMA domain with its PCIe root complex)
  kNuma,       // a NUMA node's memory
  kPciSwitch,  // a PCIe switch (upstream + downstream ports)
  kGpu,
  kNic,       // one network port (an RDMA device port or a network interface)
  kNvswitch,  // the NVSwitch fabric of the host (all NVSwitch chips as one node, as NCCL does)
};

const char* nodeTypeName(NodeType t);  // "machine", "package", "numa", "pci_switch", "gpu", "nic", "nvswitch"
bool parseNodeType(std::string_view s, NodeType* out);

// One node. Fields not meaningful for a node's type stay at their defaults.
struct Node {
  NodeType type = NodeType::kMachine;
  std::string id;                       // unique within the host: "pkg0", "numa1", "sw2", "gpu3", "nic0", "nvs0"
  int parent = -1;                      // index of the containing node; -1 only for the machine
  int osIndex = -1;                     // package / NUMA OS index; GPU CUDA device index; NIC device index (NCCL "dev")
  std::string busId;                    // PCI address "dddd:bb:dd.f" in lower case (switches, GPUs, NICs)
  std::string name;                     // CPU model, GPU product name, NIC device name ("mlx5_0", "eth0")
  std::string vendor;                   // CPU vendor ("GenuineIntel", "AuthenticAMD")
  int cores = 0;                        // package, NUMA: physical cores
  int pus = 0;                          // package, NUMA: hardware threads
  uint64_t memoryBytes = 0;             // NUMA: local memory; GPU: device memory
  int sm = 0;                           // GPU: compute capability x10 (70 V100, 80 A100, 90 H100)
  NetKind netKind = NetKind::kUnknown;  // NIC
  double speedGbps = -1;                // NIC: port line rate in Gb/s, -1 when unknown
  int port = 0;                         // NIC: port number on its device (RDMA ports count from 1)
  std::string guid;                     // NIC: node GUID (RDMA)
  std::string netdev;                   // NIC: the IP interface of the port ("ib0", "ens1f0"), when known
  bool gdr = false;                     // NIC: can read/write GPU memory directly (GPUDirect RDMA)

  bool operator==(const Node&) const = default;
};

// One bidirectional link between nodes a and b (indices into HostTopology::nodes). For containment links a is the
// parent.
struct Link {
  int a = -1;
  int b = -1;
  LinkType type = LinkType::kPcie;
  double bandwidth = 0;  // GB/s per direction
  double latencyUs = 0;
  int pcieGen = 0;        // PCIe: 1-6, 0 unknown
  int pcieWidth = 0;      // PCIe: lanes, 0 unknown
  int nvlinkCount = 0;    // NVLink: links bundled in this edge
  int nvlinkVersion = 0;  // NVLink: 1-5

  bool operator==(const Link&) const = default;
};

// One host: its id (what groups ranks into hosts) and its graph.
struct HostTopology {
  std::string id;           // host id: hostname + boot id when detected (topo/host_id.hpp), or a file's name
  std::string hostname;     // for people
  std::vector<Node> nodes;  // nodes[0] is the machine
  std::vector<Link> links;

  HostTopology();  // starts with the machine node

  // Index of the node with this id, -1 when none.
  int find(std::string_view nodeId) const;
  // Indices of the nodes of a type, in node order (which is the order GPUs and NICs are numbered in).
  std::vector<int> nodesOfType(NodeType t) const;
  int count(NodeType t) const;
  // Index of the link between a and b (either direction) of a type, -1 when none.
  int findLink(int a, int b, LinkType t) const;
  // The package a node belongs to (itself for a package), -1 for the machine and the NVSwitch fabric.
  int packageOf(int node) const;
  // Total physical cores / hardware threads over the packages.
  int totalCores() const;
  int totalPus() const;

  // Append and return the new index. addNode does not link the node to its parent: callers add that link.
  int addNode(Node node);
  int addLink(Link link);

  bool operator==(const HostTopology&) const = default;
};

// Fills what every host graph needs and detectors/loaders may leave out: a package when there is none (and
// re-parents orphans to it), SMP links between every pair of packages when the graph has none, and default
// bandwidth/latency on links that have none (PCIe from gen x width, NVLink from count x version, where the version
// comes from the GPU's compute capability), and puts links in a canonical order (each node's link to its parent, in
// node order, then the others), so that equal graphs compare equal however they were built. Idempotent.
void completeHost(HostTopology& host);

// Where a rank runs: its host and, optionally, the GPU it drives, the NUMA node it is bound to and the NIC it
// sends through across hosts.
struct RankPlacement {
  int host = -1;  // index into JobTopology::hosts
  int gpu = -1;   // node index in that host, -1 for a CPU rank
  int numa = -1;  // node index in that host, -1 when unbound / unknown
  int nic = -1;   // node index in that host, -1: the nearest NIC (topo::JobPaths picks it)

  bool operator==(const RankPlacement&) const = default;
};

// The network joining the hosts: every host's NICs reach every other host's NICs through one fabric.
struct Network {
  NetKind kind = NetKind::kUnknown;
  double speedGbps = -1;  // per-port line rate of the fabric (the switch ports); -1 = as fast as the NICs
  double latencyUs = -1;  // one-way NIC-to-NIC latency; -1 = defaultNetLatencyUs(kind)

  bool operator==(const Network&) const = default;
};

// A whole job.
struct JobTopology {
  std::string name;         // e.g. "dgx-h100"
  std::string description;  // free text
  std::vector<HostTopology> hosts;
  std::vector<RankPlacement> ranks;  // index = rank
  Network network;

  bool operator==(const JobTopology&) const = default;
};

// The network a set of hosts implies when nothing says otherwise: the kind of the fastest NIC, at the slowest host's
// best NIC speed (the fabric can go no faster for a collective), with that kind's latency.
Network deriveNetwork(const std::vector<HostTopology>& hosts);

// Default placement: one rank per GPU on every host, or one unbound rank per host without GPUs.
std::vector<RankPlacement> defaultRanks(const std::vector<HostTopology>& hosts);

// Whether any rank of the job drives a GPU; the same job with every rank a CPU rank (what host-memory calls see).
bool placesGpus(const JobTopology& job);
JobTopology withCpuRanks(JobTopology job);

// Checks a job for consistency (node ids unique, parents and links in range, placements pointing at a GPU / NUMA node
// of their host, positive bandwidths); throws Error(ternInvalidArgument, "<where>: <problem>") on the first problem.
void validate(const JobTopology& job, const std::string& where);

// Normalizes a PCI bus id to "dddd:bb:dd.f" in lower case ("00000000:1B:00.0" -> "0000:1b:00.0").
std::string normalizeBusId(std::string_view busId);

}  // namespace tern::topo
