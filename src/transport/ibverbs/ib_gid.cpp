#include "transport/ibverbs/ib_gid.hpp"

#include "base/error.hpp"

namespace tern::ib {

bool isZeroGid(const std::array<uint8_t, 16>& gid) {
  for (uint8_t b : gid) {
    if (b != 0) return false;
  }
  return true;
}

bool isIpv4MappedGid(const std::array<uint8_t, 16>& gid) {
  for (int i = 0; i < 10; ++i) {
    if (gid[i] != 0) return false;
  }
  return gid[10] == 0xff && gid[11] == 0xff;
}

int chooseGidIndex(const std::vector<GidEntry>& table, int requested, const char* device, int port) {
  if (requested >= 0) {
    for (const GidEntry& e : table) {
      if (e.index == requested) {
        if (isZeroGid(e.gid)) {
          throwError(ternInvalidArgument, "TERN_IB_GID_INDEX=%d: entry %d of %s port %d is empty (no address)",
                     requested, requested, device, port);
        }
        return requested;
      }
    }
    throwError(ternInvalidArgument, "TERN_IB_GID_INDEX=%d: %s port %d has no GID entry %d", requested, device, port,
               requested);
  }
  const GidEntry* v2 = nullptr;
  const GidEntry* any = nullptr;
  for (const GidEntry& e : table) {
    if (isZeroGid(e.gid)) continue;
    if (e.type == GidType::kRoceV2 && isIpv4MappedGid(e.gid)) return e.index;
    if (e.type == GidType::kRoceV2 && v2 == nullptr) v2 = &e;
    if (any == nullptr) any = &e;
  }
  if (v2 != nullptr) return v2->index;
  if (any != nullptr) return any->index;
  throwError(ternSystemError, "ibverbs: %s port %d has no usable GID (is an IP address configured on its netdev?)",
             device, port);
}

}  // namespace tern::ib
