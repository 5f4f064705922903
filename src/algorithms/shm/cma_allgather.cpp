// Allgather of ordinary (unregistered) buffers between processes that may read each other's memory with
// process_vm_readv (CMA): every rank copies its own block into its output and reads every peer's block straight
// out of the peer's input into its output. One copy per byte (the kernel's), where staging costs two (into the
// staging slot, then out of it) plus a wait per chunk.
//
// Safety: every rank is inside the call (describeCall's exchange) before anyone reads its input, and nobody leaves
// before every rank has posted `done`, so an input is not reused while a peer still reads it. Outputs are private.
#include <cstring>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"

namespace tern::shm {

void cmaAllGather(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t block = a.count * c.esize;
  char* own = c.out + static_cast<size_t>(me) * block;
  if (own != c.in) copyBytes(own, c.in, block);
  for (int i = 1; i < n; ++i) {
    const int p = (me + i) % n;
    c.cmaReadPeer(p, c.out + static_cast<size_t>(p) * block, c.peerInAddr[p], block, "input");
  }
  c.finishOnePass();
}

}  // namespace tern::shm
