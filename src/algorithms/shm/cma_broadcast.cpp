// Broadcast of ordinary (unregistered) buffers between processes that may read and write each other's memory
// (CMA): every rank but the root reads the root's input straight into its output, one copy per byte (the kernel's)
// where staging costs two plus a wait per chunk.
//
// An in-place root has nothing to copy itself, so it shares the work: it writes the leading part of the buffer into
// every receiver's output (process_vm_writev) while each receiver reads the rest, both parts sized so that the root
// and every receiver copy about as much (lead = bytes / n). Every rank derives the split alike from the exchanged
// descriptors (the root is in place when its input and output addresses are the same).
//
// Safety: as cma_allgather.cpp: the root's input is read, and the receivers' outputs written, only between
// describeCall's exchange and `done`.
#include <cstring>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"

namespace tern::shm {

namespace {

// The root writes a part only when it is worth a system call per receiver, at page multiples (no page is touched
// from both ends).
constexpr size_t kMinLeadBytes = 16 * 1024;
constexpr size_t kLeadAlign = 4096;

}  // namespace

void cmaBroadcast(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int me = c.rank, root = a.root, n = c.n;
  const size_t bytes = a.count * c.esize;
  const bool rootInPlace = c.peerInAddr[root] == c.peerOutAddr[root];
  size_t lead = rootInPlace ? bytes / static_cast<size_t>(n) / kLeadAlign * kLeadAlign : 0;
  if (lead < kMinLeadBytes) lead = 0;
  if (me == root) {
    if (c.out != c.in) copyBytes(c.out, c.in, bytes);
    for (int i = 1; lead > 0 && i < n; ++i) {
      const int p = (me + i) % n;
      c.cmaWritePeer(p, c.peerOutAddr[p], c.in, lead, "output");
    }
  } else if (lead < bytes) {
    c.cmaReadPeer(root, c.out + lead, c.peerInAddr[root] + lead, bytes - lead, "input (the root's)");
  }
  c.finishOnePass();
}

}  // namespace tern::shm
