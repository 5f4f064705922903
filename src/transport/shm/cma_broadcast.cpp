// Broadcast of ordinary (unregistered) buffers between processes that may read each other's memory with
// process_vm_readv (CMA): every rank but the root reads the root's input straight into its output, one copy per
// byte (the kernel's) where staging costs two plus a wait per chunk.
//
// Safety: as cma_allgather.cpp: the root's input is read only between describeCall's exchange and `done`.
#include <cerrno>
#include <cstring>

#include "transport/shm/direct_call.hpp"
#include "transport/shm/process_identity.hpp"

namespace tern::shm {

void cmaBroadcast(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int me = c.rank, root = a.root;
  const size_t bytes = a.count * c.esize;
  if (me == root) {
    if (c.out != c.in) std::memcpy(c.out, c.in, bytes);
  } else if (!cmaRead(c.mesh->peer(root).pid, c.out, c.peerInAddr[root], bytes)) {
    throwError(ternSystemError, "rank %d: %s: cannot read root %d's input (process_vm_readv: %s)", me, c.what, root,
               std::strerror(errno));
  }
  const uint32_t g = c.chunkBase + c.chunks;
  c.post(&RankControl::done, g);
  c.waitAllPeers(&RankControl::done, g, "end of the call");
}

}  // namespace tern::shm
