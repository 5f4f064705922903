// Broadcast of ordinary (unregistered) buffers between processes that may read each other's memory with
// process_vm_readv (CMA): every rank but the root reads the root's input straight into its output, one copy per
// byte (the kernel's) where staging costs two plus a wait per chunk.
//
// Safety: as cma_allgather.cpp: the root's input is read only between describeCall's exchange and `done`.
#include <cstring>

#include "algorithms/shm/direct_call.hpp"

namespace tern::shm {

void cmaBroadcast(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int me = c.rank, root = a.root;
  const size_t bytes = a.count * c.esize;
  if (me == root) {
    if (c.out != c.in) std::memcpy(c.out, c.in, bytes);
  } else {
    c.cmaReadPeer(root, c.out, c.peerInAddr[root], bytes, "input (the root's)");
  }
  c.finishOnePass();
}

}  // namespace tern::shm
