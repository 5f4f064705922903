#include "algorithms/shm/direct_call.hpp"

#include <cerrno>
#include <cstring>

#include "transport/shm/process_identity.hpp"

namespace tern::shm {

void DirectCall::cmaReadPeer(int p, void* dst, uint64_t addr, size_t bytes, const char* label) const {
  if (!cmaRead(mesh->peer(p).pid, dst, addr, bytes)) {
    // ESRCH: the peer process no longer exists, the same failure its closed connections report elsewhere.
    if (errno == ESRCH) {
      throwError(ternRemoteError,
                 "rank %d: %s: rank %d (same host) died while its %s was being read (process_vm_readv: %s)", rank, what,
                 p, label, std::strerror(errno));
    }
    throwError(ternSystemError, "rank %d: %s: cannot read rank %d's %s (process_vm_readv: %s)", rank, what, p, label,
               std::strerror(errno));
  }
}

void DirectCall::finishOnePass() const {
  const uint32_t g = chunkBase + chunks;
  post(&RankControl::done, g);
  waitAllPeers(&RankControl::done, g, "end of the call");
}

}  // namespace tern::shm
