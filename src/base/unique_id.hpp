// The layout of ternUniqueId's 128 bytes: what kind of rendezvous it names (a TCP root, or an in-process group),
// the root's address, and the job's random 128-bit secret that every connection proves knowledge of (base/auth.hpp;
// the secret itself never goes on the wire).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "base/socket.hpp"
#include "tern/tern.h"

namespace tern {

enum class RendezvousKind : uint8_t { kTcp = 1, kInproc = 2 };

struct Secret {
  uint8_t bytes[16] = {};
  bool operator==(const Secret& o) const;         // constant time
  static Secret random();                         // RAND_bytes; throws ternSystemError if that fails
  static Secret fromHex(const std::string& hex);  // throws ternInvalidArgument
  std::string hex() const;
};

struct UniqueIdData {
  static constexpr uint32_t kMagic = 0x49524e54;  // "TNRI"
  uint32_t magic = kMagic;
  RendezvousKind kind = RendezvousKind::kTcp;
  uint8_t pad[3] = {};
  Secret secret;
  uint32_t addrLength = 0;
  uint8_t addr[sizeof(sockaddr_in6)] = {};

  SocketAddress rootAddress() const;
  void setRootAddress(const SocketAddress& a);
  ternUniqueId pack() const;
  static UniqueIdData unpack(const ternUniqueId& id);  // throws ternInvalidArgument if not a tern id
};
static_assert(sizeof(UniqueIdData) <= TERN_UNIQUE_ID_BYTES);

}  // namespace tern

namespace tern {
// An id for ranks that are threads of this process talking through the in-process transport (tests, and
// TERN_TRANSPORT=inproc).
inline UniqueIdData makeInprocUniqueId() {
  UniqueIdData id;
  id.kind = RendezvousKind::kInproc;
  id.secret = Secret::random();
  return id;
}
}  // namespace tern
