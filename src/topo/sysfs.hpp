// Small readers for the Linux sysfs files detection needs beyond what hwloc reports: NIC speeds and link layers,
// PCIe link generation and width. Every reader returns an "unknown" value instead of failing, because sysfs differs
// between kernels, containers and VMs and a missing figure must not stop detection.
#pragma once

#include <string>
#include <vector>

#include "topo/link.hpp"

namespace tern::topo::sysfs {

// First line of a file without trailing whitespace, "" when it cannot be read.
std::string readLine(const std::string& path);

// Entries of a directory (no "." / ".."), sorted; empty when it cannot be read.
std::vector<std::string> listDir(const std::string& path);

// Line rate of a network interface from /sys/class/net/<ifname>/speed, in Gb/s; -1 when unknown (virtual NICs and
// links that are down report -1 or nothing).
double netdevSpeedGbps(const std::string& ifname);

// One port of an RDMA device (/sys/class/infiniband/<dev>/ports/<port>).
struct RdmaPort {
  NetKind kind = NetKind::kUnknown;  // link_layer: InfiniBand -> ib, Ethernet -> roce
  double speedGbps = -1;             // rate, e.g. "400 Gb/sec (4X NDR)"
  std::string netdev;                // the port's IP interface, when the kernel names one
};
RdmaPort rdmaPort(const std::string& device, int port);

// Negotiated PCIe link of a device (current_link_speed / current_link_width); false when unknown.
bool pcieLink(const std::string& busId, int* gen, int* width);

// Whether GPUDirect RDMA is available: the nvidia-peermem (or older nv_peer_mem) kernel module is loaded.
bool gpuDirectRdma();

}  // namespace tern::topo::sysfs
