// Links of the topology graph, the network kinds a NIC can speak, and the link classes the cost model keys its
// alpha (latency) and beta (1 / bandwidth) terms on.
//
// Units, everywhere in src/topo: bandwidth in GB/s (1e9 bytes per second) per direction, latency in microseconds,
// network line rates in Gb/s. Bandwidth figures follow the hardware presets of docs REFERENCE.md: NVLink at its
// nominal rate, PCIe at its practical rate (about 76% of the raw signalling rate: Gen4 x16 = 24 GB/s), networks at
// line rate. Calibration from measured runs belongs to the cost model, not here.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tern::topo {

// Physical kind of one link of a host graph.
enum class LinkType : uint8_t {
  kMemory,  // a NUMA node's memory to its CPU package (on-chip)
  kPcie,    // PCIe: a device or switch to its upstream switch or CPU
  kNvlink,  // NVLink: GPU to GPU, or GPU to the NVSwitch fabric
  kSmp,     // CPU package to CPU package: Intel QPI/UPI, AMD xGMI (Infinity Fabric)
  kNet,     // a NIC port to the network fabric (only in job-level paths, never inside a host graph)
};

// What a NIC (and a job's fabric) speaks.
enum class NetKind : uint8_t {
  kUnknown,
  kInfiniband,  // native InfiniBand (verbs, RDMA)
  kRoce,        // RDMA over Converged Ethernet (verbs on an Ethernet port)
  kEthernet,    // plain Ethernet (TCP sockets)
};

// The class of a rank-to-rank path, the key of the cost model's per-link alpha/beta. A path is as good as its
// worst segment: two GPUs on different sockets talk through PCIe and the SMP interconnect, so their class is kSmp.
enum class LinkClass : uint8_t {
  kShm,      // same host memory (shared-memory FIFOs, or the same device)
  kNvlink,   // NVLink, direct or through NVSwitch
  kPcie,     // PCIe, through switches and/or one CPU's host bridge
  kSmp,      // across CPU sockets
  kNetwork,  // across hosts
};
inline constexpr int kNumLinkClasses = 5;

// Defaults for a link class when nothing better is known (no topology figure, no calibration).
struct LinkClassDefaults {
  double alphaUs;       // per-message latency of one hop
  double bandwidthGBs;  // per direction
};
// kShm 0.5 us / 10 GB/s (one core's memcpy through a FIFO); kNvlink 0.6 us / 300 GB/s (A100: 600 GB/s
// bidirectional); kPcie 1.0 us / 24 GB/s (Gen4 x16); kSmp 1.0 us / 20 GB/s; kNetwork 2.7 us / 12.5 GB/s (100 Gb/s).
// Latencies are the low ends of NCCL's per-hop figures (NVLink 0.6-3.4, PCIe 1-5.7, network 2.7-14 us).
LinkClassDefaults linkClassDefaults(LinkClass c);

const char* linkTypeName(LinkType t);    // "memory", "pcie", "nvlink", "smp", "net"
const char* netKindName(NetKind k);      // "unknown", "ib", "roce", "ethernet"
const char* linkClassName(LinkClass c);  // "shm", "nvlink", "pcie", "smp", "network"
std::optional<LinkType> parseLinkType(std::string_view s);
std::optional<NetKind> parseNetKind(std::string_view s);  // also accepts "infiniband", "eth"

// Practical per-direction PCIe bandwidth of a gen (1-6) x width link; 0 when either is unknown (<= 0).
double pcieBandwidth(int gen, int width);
// Practical bandwidth from hwloc's `linkspeed` (raw GB/s after encoding, e.g. 31.5 for Gen4 x16); 0 stays 0.
double pcieBandwidthFromRaw(double rawGBs);
// PCIe generation from a transfer rate in GT/s (2.5, 5, 8, 16, 32, 64); 0 when not a known rate.
int pcieGenFromGts(double gts);

// Nominal per-direction bandwidth of `count` NVLinks of a version (1-5): 20, 25, 25, 25, 50 GB/s per link.
double nvlinkBandwidth(int version, int count);
// NVLink version a GPU of this compute capability (x10) uses: 60 -> 1, 70 -> 2, 80 -> 3, 90 -> 4, 100 -> 5; 0 unknown.
int nvlinkVersionForSm(int sm);

// Default latency of one link of a type (us): memory 0.1, PCIe 0.5, NVLink 0.3, SMP 0.5, net 2.7. A path's latency
// is the sum over its links, so a GPU-switch-GPU PCIe path costs 1.0 us and GPU-NVSwitch-GPU 0.6 us.
double defaultLinkLatencyUs(LinkType t);
// Default bandwidth of a link of a type when no figure is given: memory 100, PCIe 24, NVLink 25 (one link),
// SMP 20, net 12.5 GB/s.
double defaultLinkBandwidth(LinkType t);
// One-way latency of a network hop (NIC to NIC through the fabric): InfiniBand 1.0 us, RoCE 2.0 us, Ethernet
// (TCP sockets) 15 us, unknown 2.7 us.
double defaultNetLatencyUs(NetKind k);
// Line rate (Gb/s) assumed for a NIC whose speed cannot be read (virtual NICs report none): 10 Gb/s, as NCCL does.
inline constexpr double kUnknownNicSpeedGbps = 10.0;

}  // namespace tern::topo
