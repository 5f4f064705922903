// Pipelined reduce-scatter: rank r reduces block r of every rank's input into its output, chunk by chunk. A rank
// stages, per chunk, the parts of its input that its peers reduce (block q goes to sub-slot q), never its own block,
// which it reads in place. Slots are reused once every peer is done with the chunk.
#include <cstring>
#include <vector>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"

namespace tern::shm {

void pipelinedReduceScatter(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t e = c.esize;
  const size_t stride = c.chunkElems * e;  // sub-slot of one destination block
  const size_t block = a.count * e;
  std::vector<const void*>& srcs = c.srcs;
  srcs.resize(n);

  auto stageIn = [&](uint32_t j) {
    uint32_t g = c.chunkBase + j;
    if (c.inStaged) {
      c.acquireSlot(g);
      const size_t begin = c.chunkBegin(j) * e, len = (c.chunkEnd(j) - c.chunkBegin(j)) * e;
      for (int q = 0; q < n; ++q) {
        if (q != me) copyBytes(c.stage(me, g) + q * stride, c.in + q * block + begin, len);
      }
    }
    c.post(&RankControl::in, g + 1);
  };

  stageIn(0);
  for (uint32_t j = 0; j < c.chunks; ++j) {
    const uint32_t g = c.chunkBase + j;
    if (j + 1 < c.chunks) stageIn(j + 1);
    const size_t begin = c.chunkBegin(j), len = c.chunkEnd(j) - begin;
    c.waitAllPeers(&RankControl::in, g + 1, "input");
    for (int p = 0; p < n; ++p) {
      if (p == me) {
        srcs[p] = c.in + me * block + begin * e;
      } else {
        srcs[p] = c.peerIn[p] ? c.peerIn[p] + me * block + begin * e : c.stage(p, g) + me * stride;
      }
    }
    reduceInOrder(c.out + begin * e, srcs.data(), n, len, a.dtype, a.op, c.avgDivisor, c.tmp);
    c.post(&RankControl::done, g + 1);
  }
  if (!c.inStaged) c.waitAllPeers(&RankControl::done, c.chunkBase + c.chunks, "end of the call");
}

}  // namespace tern::shm
