// Allreduce of ordinary (unregistered) buffers between processes that may read each other's memory with
// process_vm_readv (CMA): nothing is staged.
//
// Rank r reads its slice of every peer's input straight out of the peer's address space into a private buffer,
// a piece at a time so the copy stays in cache, reduces it with its own input in rank order into its output, and
// posts; then it reads every peer's reduced slice straight out of that peer's output into its own. Per rank and N
// bytes that is two copies of N/n per peer and one reduction, against the staged path's three copies (stage the
// input, copy the reduced slice out of the slot, gather): the copies that exist only to cross the process boundary
// are done once, by the kernel, instead of twice.
//
// Safety: a peer reads my input's slice p only while reducing it and before posting `red`; I write my output's
// slice p (which may be my input, in place) only after seeing p's `red`. Nobody leaves the call before every rank
// posted `done`, so every address read stays valid.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/shm/direct_call.hpp"
#include "transport/shm/process_identity.hpp"

namespace tern::shm {

void cmaAllReduce(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t e = c.esize;
  // The private buffer holds one piece per peer; a piece also fits reduceInOrder's accumulator (c.tmp).
  const size_t part = std::max<size_t>(kLine, c.cmaBytes / static_cast<size_t>(n - 1) / kLine * kLine);
  const size_t pieceElems = std::max<size_t>(1, part / e);
  std::vector<const void*>& srcs = c.srcs;
  srcs.resize(n);

  auto read = [&](int p, void* dst, uint64_t src, size_t bytes, const char* what) {
    if (!cmaRead(c.mesh->peer(p).pid, dst, src, bytes)) {
      throwError(ternSystemError, "rank %d: %s: cannot read rank %d's %s (process_vm_readv: %s)", me, c.what, p, what,
                 std::strerror(errno));
    }
  };

  // Chunks of a few MiB: a peer's reduced slice is gathered soon after it was written, while it is still in cache.
  for (uint32_t j = 0; j < c.chunks; ++j) {
    const uint32_t g = c.chunkBase + j + 1;
    const size_t begin = c.chunkBegin(j), len = c.chunkEnd(j) - begin;
    const size_t lo = begin + sliceBegin(len, me, n, e), hi = begin + sliceBegin(len, me + 1, n, e);
    for (size_t off = lo; off < hi; off += pieceElems) {
      const size_t m = std::min(pieceElems, hi - off);
      char* buf = c.cmaBuf;
      for (int p = 0; p < n; ++p) {
        if (p == me) continue;
        read(p, buf, c.peerInAddr[p] + off * e, m * e, "input");
        srcs[p] = buf;
        buf += part;
      }
      srcs[me] = c.in + off * e;
      reduceInOrder(c.out + off * e, srcs.data(), n, m, a.dtype, a.op, c.avgDivisor, c.tmp);
    }
    c.post(&RankControl::red, g);

    for (int i = 1; i < n; ++i) {
      const int p = (me + i) % n;
      const size_t plo = begin + sliceBegin(len, p, n, e), phi = begin + sliceBegin(len, p + 1, n, e);
      c.wait(p, &RankControl::red, g, "reduced slice");
      if (phi > plo) read(p, c.out + plo * e, c.peerOutAddr[p] + plo * e, (phi - plo) * e, "reduced slice");
    }
    c.post(&RankControl::done, g);
  }
  c.waitAllPeers(&RankControl::done, c.chunkBase + c.chunks, "end of the call");
}

}  // namespace tern::shm
