// Paths between devices of a host and between ranks of a job, classified the way NCCL (and `nvidia-smi topo -m`)
// does, with the bottleneck bandwidth and the summed latency of the links on the way.
//
// Within a host a path may pass through CPU packages, PCIe switches and the NVSwitch fabric, never through another
// GPU, NIC or NUMA node (devices do not forward traffic). Of all such paths the best is kept: best type first (so
// NVLink wins over PCIe), then highest bottleneck bandwidth, then lowest latency, then fewest links.
#pragma once

#include <cstdint>
#include <vector>

#include "topo/link.hpp"
#include "topo/topology.hpp"

namespace tern::topo {

// Path types, best first. The names are NCCL's.
enum class PathType : uint8_t {
  kLoc,  // same device
  kNvl,  // NVLink only (direct, or through NVSwitch)
  kPix,  // PCIe through at most one switch
  kPxb,  // PCIe through several switches, not through a CPU
  kPhb,  // through a CPU's PCIe host bridge (or to/from the CPU and its memory)
  kSys,  // across the SMP interconnect between CPU sockets
  kNet,  // across hosts
  kDis,  // no path (disconnected graph)
};
const char* pathTypeName(PathType t);  // "LOC", "NVL", "PIX", "PXB", "PHB", "SYS", "NET", "DIS"

// The link class the cost model keys on for a path type: LOC -> shm, NVL -> nvlink, PIX/PXB/PHB -> pcie,
// SYS -> smp, NET (and DIS) -> network.
LinkClass linkClassOf(PathType t);

// A path between two nodes of one host.
struct Path {
  PathType type = PathType::kDis;
  double bandwidth = 0;    // bottleneck, GB/s per direction; +infinity for kLoc (no link to limit it)
  double latencyUs = 0;    // sum over links
  std::vector<int> links;  // link indices, in order from source to destination
};

// All pairs of one host, computed once (a host has tens of nodes; this takes well under a millisecond).
class HostPaths {
 public:
  explicit HostPaths(const HostTopology& host);
  const Path& get(int a, int b) const { return paths_[static_cast<size_t>(a) * n_ + b]; }
  int size() const { return static_cast<int>(n_); }

 private:
  size_t n_;
  std::vector<Path> paths_;
};

// What the cost model needs about a pair of ranks.
struct RankPath {
  PathType type = PathType::kDis;
  LinkClass linkClass = LinkClass::kNetwork;
  double bandwidth = 0;  // bottleneck GB/s per direction (for kNet: min of both local legs, both NICs, the fabric)
  double latencyUs = 0;  // one way, summed over the links (for kNet: both local legs + the fabric)
  int srcNic = -1;  // kNet: NIC node (in the source rank's host) the path leaves through; -1 when the host has none
  int dstNic = -1;  // kNet: NIC node in the destination rank's host
};

// Rank-to-rank paths of a job. Builds each host's all-pairs table once and picks each rank's NIC, so that
// between() is a lookup. The job must outlive this object.
//
// Rules, for ranks a != b:
//  - same host, same GPU, or both CPU ranks on one socket (or unbound): LOC, shm defaults;
//  - same host, two GPUs: the GPU-GPU path; a GPU and a CPU rank: the GPU to that rank's NUMA node (or the NUMA
//    node nearest the GPU when unbound); two CPU ranks on different sockets: SYS, the SMP link, shm latency added;
//  - different hosts: NET through each rank's NIC: the NIC nearest the rank's GPU (or NUMA node), ties spread over
//    the host's ranks round-robin, so that 8 GPUs sharing 2 equally near NICs use 4 each.
class JobPaths {
 public:
  explicit JobPaths(const JobTopology& job);
  explicit JobPaths(JobTopology&&) = delete;  // would dangle: JobPaths keeps a reference
  RankPath between(int a, int b) const;
  // The NIC (node index in its host) a rank sends through across hosts, -1 when its host has none.
  int nicOf(int rank) const { return nic_[rank]; }
  const HostPaths& host(int h) const { return hosts_[h]; }

 private:
  // Per direction GB/s a NIC can put on the fabric (its speed, capped by the fabric's), for a NIC node or -1.
  double nicBandwidth(int host, int nic) const;
  // The node a rank's traffic starts from inside its host: its GPU, else its NUMA node, else -1.
  int sourceNode(int rank) const;

  const JobTopology& job_;
  std::vector<HostPaths> hosts_;
  std::vector<int> nic_;
};

// One pair, without keeping tables (convenient for tools and tests; use JobPaths for many pairs).
RankPath rankPath(const JobTopology& job, int a, int b);

}  // namespace tern::topo
