// Pipelined reduce to a root: as allreduce, every rank reduces its slice of each chunk (so the root does not do all
// the arithmetic), but only the root gathers. Non-root results always go through the reducer's staging slot (a
// non-root has no output buffer); the root reduces its own slice straight into its output.
#include <cstring>
#include <vector>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"
#include "transport/shm/stream_copy.hpp"

namespace tern::shm {

void pipelinedReduce(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank, root = a.root;
  const size_t e = c.esize;
  std::vector<const void*>& srcs = c.srcs;
  srcs.resize(n);

  // Only the peers' slices are staged: this rank reads its own slice straight from its input. Non-roots write
  // their result into their own slice of the slot.
  auto stageIn = [&](uint32_t j) {
    uint32_t g = c.chunkBase + j;
    c.acquireSlot(g);
    if (c.inStaged) {
      const size_t begin = c.chunkBegin(j), len = c.chunkEnd(j) - begin;
      const size_t lo = sliceBegin(len, me, n, e), hi = sliceBegin(len, me + 1, n, e);
      copyBytes(c.stage(me, g), c.in + begin * e, lo * e);
      copyBytes(c.stage(me, g) + hi * e, c.in + (begin + hi) * e, (len - hi) * e);
    }
    c.post(&RankControl::in, g + 1);
  };

  stageIn(0);
  for (uint32_t j = 0; j < c.chunks; ++j) {
    const uint32_t g = c.chunkBase + j;
    const size_t begin = c.chunkBegin(j), len = c.chunkEnd(j) - begin;
    const size_t lo = sliceBegin(len, me, n, e), hi = sliceBegin(len, me + 1, n, e);
    c.waitAllPeers(&RankControl::in, g + 1, "input");
    for (int p = 0; p < n; ++p) {
      srcs[p] = c.peerIn[p] ? c.peerIn[p] + (begin + lo) * e : c.stage(p, g) + lo * e;
    }
    srcs[me] = c.in + (begin + lo) * e;
    char* dst = me == root ? c.out + (begin + lo) * e : c.stage(me, g) + lo * e;
    reduceInOrder(dst, srcs.data(), n, hi - lo, a.dtype, a.op, c.avgDivisor, c.tmp);
    c.post(&RankControl::red, g + 1);

    if (j + 1 < c.chunks) stageIn(j + 1);

    if (me == root) {
      for (int i = 1; i < n; ++i) {
        const int p = (me + i) % n;
        const size_t plo = sliceBegin(len, p, n, e), phi = sliceBegin(len, p + 1, n, e);
        c.wait(p, &RankControl::red, g + 1, "reduced slice");
        copyOut(c.out + (begin + plo) * e, c.stage(p, g) + plo * e, (phi - plo) * e, c.streamOut);
      }
    }
    c.post(&RankControl::done, g + 1);
  }
  if (!c.inStaged) c.waitAllPeers(&RankControl::done, c.chunkBase + c.chunks, "end of the call");
}

}  // namespace tern::shm
