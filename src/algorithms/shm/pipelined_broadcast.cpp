// Pipelined broadcast: the root makes each chunk readable (staged, or in place) and every other rank copies it into
// its output; the root reuses a staging slot once every rank is done with its chunk.
#include <cstring>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"
#include "transport/shm/stream_copy.hpp"

namespace tern::shm {

void pipelinedBroadcast(DirectCall& c) {
  const int me = c.rank, root = c.args->root;
  const size_t e = c.esize;

  auto stageIn = [&](uint32_t j) {
    uint32_t g = c.chunkBase + j;
    if (c.inStaged) {
      c.acquireSlot(g);
      copyBytes(c.stage(me, g), c.in + c.chunkBegin(j) * e, (c.chunkEnd(j) - c.chunkBegin(j)) * e);
    }
    c.post(&RankControl::in, g + 1);
  };

  if (me == root) stageIn(0);
  for (uint32_t j = 0; j < c.chunks; ++j) {
    const uint32_t g = c.chunkBase + j;
    const size_t begin = c.chunkBegin(j) * e, len = (c.chunkEnd(j) - c.chunkBegin(j)) * e;
    if (me == root) {
      if (j + 1 < c.chunks) stageIn(j + 1);
      if (c.out + begin != c.in + begin) copyOut(c.out + begin, c.in + begin, len, c.streamOut);
    } else {
      c.wait(root, &RankControl::in, g + 1, "data");
      copyOut(c.out + begin, c.peerIn[root] ? c.peerIn[root] + begin : c.stage(root, g), len, c.streamOut);
    }
    c.post(&RankControl::done, g + 1);
  }
  if (me == root && !c.inStaged) c.waitAllPeers(&RankControl::done, c.chunkBase + c.chunks, "end of the call");
}

}  // namespace tern::shm
