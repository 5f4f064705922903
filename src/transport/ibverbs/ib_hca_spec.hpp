// TERN_IB_HCA: which RDMA devices and ports a rank may use, in NCCL's NCCL_IB_HCA syntax.
//
//   "mlx5"              every device whose name starts with mlx5 (names are prefixes unless '=' is given)
//   "mlx5_0:1,mlx5_1"   port 1 of mlx5_0, and every port of mlx5_1
//   "^mlx5_2"           everything except devices starting with mlx5_2
//   "=mlx5_0"           exactly mlx5_0 (not mlx5_01)
//   "^=mlx5_0:2"        everything except port 2 of exactly mlx5_0
//   ""                  everything
//
// Parsing and matching are pure (no verbs calls), so they are unit-tested on machines without RDMA devices.
#pragma once

#include <string>
#include <vector>

namespace tern::ib {

struct HcaEntry {
  std::string name;
  int port = -1;  // -1: every port
};

struct HcaSpec {
  bool exclude = false;  // leading '^'
  bool exact = false;    // leading '=' (after '^' if both)
  std::vector<HcaEntry> entries;

  // Throws tern::Error(ternInvalidArgument) naming TERN_IB_HCA on a malformed spec (empty name, bad port).
  static HcaSpec parse(const std::string& spec);
  bool selects(const std::string& device, int port) const;
  std::string toString() const;
};

enum class LinkLayer { kInfiniBand, kEthernet, kUnknown };

// One port of one device, as enumeration found it.
struct PortInfo {
  std::string device;
  int port = 1;
  bool active = false;
  LinkLayer linkLayer = LinkLayer::kUnknown;
};

// The active ports the spec selects, in enumeration order.
std::vector<PortInfo> selectPorts(const HcaSpec& spec, const std::vector<PortInfo>& all);

// The port this rank uses among the selected ones: spreads the ranks of a multi-NIC host over its NICs (rank
// modulo the count), the same choice on every rank of a host with identical hardware.
const PortInfo& portForRank(const std::vector<PortInfo>& selected, int rank);

}  // namespace tern::ib
