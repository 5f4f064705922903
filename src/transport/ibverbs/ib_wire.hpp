// What two ranks exchange over the TCP mesh to connect an RC queue pair, as a fixed 64-byte record with an explicit
// little-endian layout (no struct is sent raw, so ranks built by different compilers agree):
//
//   offset size  field
//        0    4  magic 0x56424954 ("TIBV")
//        4    2  version (1)
//        6    1  link layer (1 InfiniBand, 2 Ethernet/RoCE)
//        7    1  active MTU (enum ibv_mtu: 1=256 ... 5=4096)
//        8    2  LID (InfiniBand; 0 on RoCE)
//       10    1  port number
//       11    1  reserved (0)
//       12    4  QP number (24 bits)
//       16    4  initial packet sequence number (24 bits)
//       20    4  receive ring: slot count
//       24    4  receive ring: bytes per slot (header included)
//       28    4  receive ring: rkey
//       32    8  receive ring: virtual address
//       40   16  GID (network byte order, as the verbs API holds it)
//       56    8  reserved (0)
//
// A record is specific to one (sender, receiver) pair: each rank sends every peer the QP and ring it dedicated to
// that peer. The version lets a mismatched build fail with a clear error instead of a broken connection.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace tern::ib {

inline constexpr uint32_t kWireMagic = 0x56424954;
inline constexpr uint16_t kWireVersion = 1;
inline constexpr size_t kQpAddressBytes = 64;

struct QpAddress {
  uint8_t linkLayer = 1;
  uint8_t mtu = 3;
  uint16_t lid = 0;
  uint8_t port = 1;
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t slots = 0;
  uint32_t slotBytes = 0;
  uint32_t rkey = 0;
  uint64_t ringAddress = 0;
  std::array<uint8_t, 16> gid{};

  bool operator==(const QpAddress&) const = default;
};

std::array<uint8_t, kQpAddressBytes> encodeQpAddress(const QpAddress& a);
// Throws tern::Error: ternInvalidUsage for another version or a foreign record, ternInternalError for fields out of
// range (24-bit QPN/PSN, empty ring, unknown link layer or MTU).
QpAddress decodeQpAddress(const uint8_t* data, size_t bytes, int fromRank);

}  // namespace tern::ib
