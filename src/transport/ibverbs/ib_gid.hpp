// Choosing the GID index for RoCE (TERN_IB_GID_INDEX).
//
// On RoCE every packet carries a GRH, and the GID index picks both the source address and the protocol: RoCE v2
// (UDP/IP, routable, what current fabrics run) or v1 (raw Ethernet). The table usually holds, per IP address of the
// interface, a v1 and a v2 entry, plus link-local (fe80::) ones. Without TERN_IB_GID_INDEX the choice is the first
// RoCE v2 entry whose address is IPv4-mapped (::ffff:a.b.c.d), else the first RoCE v2 entry, else the first
// non-zero entry: the same preference as NCCL's automatic selection. On InfiniBand the GID is only used across
// subnets, and index 0 (the port GID) is right.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tern::ib {

enum class GidType { kInfiniBand, kRoceV1, kRoceV2 };

struct GidEntry {
  int index = 0;
  GidType type = GidType::kInfiniBand;
  std::array<uint8_t, 16> gid{};
};

bool isZeroGid(const std::array<uint8_t, 16>& gid);
bool isIpv4MappedGid(const std::array<uint8_t, 16>& gid);

// requested: TERN_IB_GID_INDEX, or -1 for automatic. Throws tern::Error(ternInvalidArgument) when the requested
// index is not in the table or holds a zero GID, and ternSystemError when the table has no usable entry.
int chooseGidIndex(const std::vector<GidEntry>& table, int requested, const char* device, int port);

}  // namespace tern::ib
