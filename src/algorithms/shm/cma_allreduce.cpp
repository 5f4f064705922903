// Allreduce of ordinary (unregistered) buffers between processes that may read and write each other's memory with
// process_vm_readv/writev (CMA): nothing is staged, and no rank waits for another until the end of the call.
//
// Rank r owns slice r of the buffer. Piece by piece it reads slice r of every peer's input straight out of the
// peer's address space into a private buffer, reduces it with its own input in rank order into its output, and
// writes the result straight into every peer's output while it is still in cache. Per rank and N bytes that is
// two kernel copies of N/n per peer plus one reduction, against the staged path's three copies (stage the input,
// copy the reduced slice out of the slot, gather) and its per-chunk waits.
//
// Reduce is the same with one receiver: rank r writes its reduced slice only into the root's output (ranks other
// than the root reduce into private scratch, since their own output is not theirs to write in a reduce).
// Reduce-scatter is the first half alone: rank r reads block r of every peer's input and reduces it into its own
// output; nothing is written into a peer.
//
// Safety: slice r of a peer's input is read only by rank r, which reads each piece before it writes that piece of
// the peer's output (the same memory when the peer runs in place). Every rank is inside the call (describeCall's
// exchange) before anyone touches its buffers, and nobody leaves before every rank has posted `done`.
#include <algorithm>
#include <vector>

#include "algorithms/shm/direct_call.hpp"

namespace tern::shm {

namespace {

// c.srcs for elements [at, at + m) of every rank's input: peers' pieces read by CMA into c.cmaBuf, `part` bytes apart,
// this rank's own in place.
void readPeersPieces(DirectCall& c, size_t at, size_t m, size_t part) {
  std::vector<const void*>& srcs = c.srcs;
  srcs.resize(c.n);
  char* buf = c.cmaBuf;
  for (int p = 0; p < c.n; ++p) {
    if (p == c.rank) continue;
    c.cmaReadPeer(p, buf, c.peerInAddr[p] + at * c.esize, m * c.esize, "input");
    srcs[p] = buf;
    buf += part;
  }
  srcs[c.rank] = c.in + at * c.esize;
}

// root < 0: every rank receives the result (allreduce); otherwise only the root (reduce).
void cmaReduceSlices(DirectCall& c, int root) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t e = c.esize;
  // The private buffer holds one piece per peer. Large pieces: every piece costs a system call per peer and way.
  size_t part = std::max<size_t>(kLine, c.cmaBytes / static_cast<size_t>(n - 1) / kLine * kLine);
  // reduceInOrder may accumulate a piece in c.tmp; a reduce's ranks other than the root reduce into it.
  if (n > 2 || root >= 0) part = std::min(part, kStageSlotBytes);
  const size_t pieceElems = std::max<size_t>(1, part / e);

  // Piece by piece: read the peers' input, reduce into my output, and write the result straight into every peer's
  // output while it is still in cache. No rank waits for another until the end.
  for (uint32_t j = 0; j < c.chunks; ++j) {
    const size_t begin = c.chunkBegin(j), len = c.chunkEnd(j) - begin;
    const size_t lo = begin + sliceBegin(len, me, n, e), hi = begin + sliceBegin(len, me + 1, n, e);
    for (size_t off = lo; off < hi; off += pieceElems) {
      const size_t m = std::min(pieceElems, hi - off);
      readPeersPieces(c, off, m, part);
      // Ordinary stores (streaming ones measured slower here: the piece is sent to the peers right after, from
      // cache, and outputs of up to kCmaMaxBytes fit the last-level cache).
      const bool keeps = root < 0 || me == root;
      char* result = keeps ? c.out + off * e : c.tmp;
      reduceInOrder(result, c.srcs.data(), n, m, a.dtype, a.op, c.avgDivisor, c.tmp);
      for (int i = 1; i < n; ++i) {
        const int p = (me + i) % n;
        if (root < 0 || p == root) c.cmaWritePeer(p, c.peerOutAddr[p] + off * e, result, m * e, "output");
      }
    }
  }
  c.finishOnePass();
}

}  // namespace

void cmaAllReduce(DirectCall& c) { cmaReduceSlices(c, -1); }

void cmaReduceScatter(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t e = c.esize;
  const size_t part = std::max<size_t>(kLine, c.cmaBytes / static_cast<size_t>(n - 1) / kLine * kLine);
  const size_t pieceElems = std::max<size_t>(1, part / e);
  const size_t blockBase = static_cast<size_t>(me) * a.count;  // this rank's block in every rank's input
  for (uint32_t j = 0; j < c.chunks; ++j) {
    for (size_t off = c.chunkBegin(j); off < c.chunkEnd(j); off += pieceElems) {
      const size_t m = std::min(pieceElems, c.chunkEnd(j) - off);
      readPeersPieces(c, blockBase + off, m, part);
      reduceInOrder(c.out + off * e, c.srcs.data(), n, m, a.dtype, a.op, c.avgDivisor, c.tmp);
    }
  }
  c.finishOnePass();
}

void cmaReduce(DirectCall& c) { cmaReduceSlices(c, c.args->root); }

}  // namespace tern::shm
