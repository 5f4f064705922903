#include "transport/transport.hpp"

#include "base/error.hpp"

namespace tern {

void Transport::refuseMemory(MemoryKind kind, int peer, const char* what) const {
  throwError(ternInvalidUsage, "the %s transport cannot %s rank %d: it does not carry %s memory", name(), what, peer,
             memoryKindName(kind));
}

}  // namespace tern
