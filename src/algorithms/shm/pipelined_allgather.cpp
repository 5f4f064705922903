// Pipelined allgather: per chunk, every rank makes its part readable (staged, or in place) and copies every peer's
// part into its output. With in-place (registered or same-process) inputs this is one copy per byte; staged, two,
// with the staging copy of chunk j + 1 overlapping the peers' reads of chunk j.
#include <cstring>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"
#include "transport/shm/stream_copy.hpp"

namespace tern::shm {

void pipelinedAllGather(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t e = c.esize;
  const size_t block = a.count * e;

  auto stageIn = [&](uint32_t j) {
    uint32_t g = c.chunkBase + j;
    if (c.inStaged) {
      c.acquireSlot(g);
      copyBytes(c.stage(me, g), c.in + c.chunkBegin(j) * e, (c.chunkEnd(j) - c.chunkBegin(j)) * e);
    }
    c.post(&RankControl::in, g + 1);
  };

  stageIn(0);
  for (uint32_t j = 0; j < c.chunks; ++j) {
    const uint32_t g = c.chunkBase + j;
    if (j + 1 < c.chunks) stageIn(j + 1);
    const size_t begin = c.chunkBegin(j) * e, len = (c.chunkEnd(j) - c.chunkBegin(j)) * e;
    char* own = c.out + me * block + begin;
    if (own != c.in + begin) copyOut(own, c.in + begin, len, c.streamOut);
    for (int i = 1; i < n; ++i) {
      const int p = (me + i) % n;
      c.wait(p, &RankControl::in, g + 1, "input");
      const char* src = c.peerIn[p] ? c.peerIn[p] + begin : c.stage(p, g);
      copyOut(c.out + p * block + begin, src, len, c.streamOut);
    }
    c.post(&RankControl::done, g + 1);
  }
  if (!c.inStaged) c.waitAllPeers(&RankControl::done, c.chunkBase + c.chunks, "end of the call");
}

}  // namespace tern::shm
