#include "base/unique_id.hpp"

#include <openssl/crypto.h>
#include <unistd.h>

#include "base/auth.hpp"
#include "base/error.hpp"

namespace tern {

Secret Secret::random() {
  Secret s;
  fillRandom(s.bytes, sizeof(s.bytes));
  return s;
}

bool Secret::operator==(const Secret& o) const { return CRYPTO_memcmp(bytes, o.bytes, sizeof(bytes)) == 0; }

Secret Secret::fromHex(const std::string& hex) {
  if (hex.size() != 32) throwError(ternInvalidArgument, "secret must be 32 hex digits, got '%s'", hex.c_str());
  Secret s;
  for (size_t i = 0; i < 16; ++i) {
    auto nibble = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      throwError(ternInvalidArgument, "secret must be 32 hex digits, got '%s'", hex.c_str());
    };
    s.bytes[i] = static_cast<uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
  return s;
}

std::string Secret::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

SocketAddress UniqueIdData::rootAddress() const {
  SocketAddress a;
  a.length = addrLength;
  std::memcpy(&a.storage, addr, addrLength);
  return a;
}

void UniqueIdData::setRootAddress(const SocketAddress& a) {
  addrLength = a.length;
  std::memcpy(addr, &a.storage, a.length);
}

ternUniqueId UniqueIdData::pack() const {
  ternUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::memcpy(id.internal, this, sizeof(*this));
  return id;
}

UniqueIdData UniqueIdData::unpack(const ternUniqueId& id) {
  UniqueIdData d;
  std::memcpy(&d, id.internal, sizeof(d));
  if (d.magic != kMagic || (d.kind != RendezvousKind::kTcp && d.kind != RendezvousKind::kInproc) ||
      d.addrLength > sizeof(d.addr)) {
    throwError(ternInvalidArgument, "unique id was not made by ternGetUniqueId (bad magic or kind)");
  }
  return d;
}

}  // namespace tern
