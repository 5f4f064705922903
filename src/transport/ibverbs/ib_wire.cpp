#include "transport/ibverbs/ib_wire.hpp"

#include <cstring>

#include "base/error.hpp"

namespace tern::ib {

namespace {

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

constexpr uint32_t k24Bits = 0xffffff;

}  // namespace

std::array<uint8_t, kQpAddressBytes> encodeQpAddress(const QpAddress& a) {
  std::array<uint8_t, kQpAddressBytes> out{};
  put32(&out[0], kWireMagic);
  put16(&out[4], kWireVersion);
  out[6] = a.linkLayer;
  out[7] = a.mtu;
  put16(&out[8], a.lid);
  out[10] = a.port;
  put32(&out[12], a.qpn & k24Bits);
  put32(&out[16], a.psn & k24Bits);
  put32(&out[20], a.slots);
  put32(&out[24], a.slotBytes);
  put32(&out[28], a.rkey);
  put64(&out[32], a.ringAddress);
  std::memcpy(&out[40], a.gid.data(), 16);
  return out;
}

QpAddress decodeQpAddress(const uint8_t* p, size_t bytes, int fromRank) {
  if (bytes != kQpAddressBytes || get32(p) != kWireMagic) {
    throwError(ternInvalidUsage, "ibverbs: rank %d sent a connection record that is not tern's (%zu bytes)", fromRank,
               bytes);
  }
  uint16_t version = get16(p + 4);
  if (version != kWireVersion) {
    throwError(ternInvalidUsage,
               "ibverbs: rank %d speaks connection record version %u, this rank version %u (mixed tern builds?)",
               fromRank, version, kWireVersion);
  }
  QpAddress a;
  a.linkLayer = p[6];
  a.mtu = p[7];
  a.lid = get16(p + 8);
  a.port = p[10];
  a.qpn = get32(p + 12);
  a.psn = get32(p + 16);
  a.slots = get32(p + 20);
  a.slotBytes = get32(p + 24);
  a.rkey = get32(p + 28);
  a.ringAddress = get64(p + 32);
  std::memcpy(a.gid.data(), p + 40, 16);
  const char* bad = nullptr;
  if (a.linkLayer != 1 && a.linkLayer != 2) bad = "link layer";
  if (a.mtu < 1 || a.mtu > 5) bad = "MTU";
  if (a.qpn == 0 || a.qpn > k24Bits) bad = "QP number";
  if (a.psn > k24Bits) bad = "PSN";
  if (a.slots == 0 || a.slotBytes == 0 || a.ringAddress == 0) bad = "receive ring";
  if (bad != nullptr)
    throwError(ternInternalError, "ibverbs: rank %d sent a connection record with a bad %s", fromRank, bad);
  return a;
}

}  // namespace tern::ib
