// Pipelined allreduce: reduce-scatter and allgather fused per chunk, through shared memory.
//
// Every chunk of the buffer is split into one slice per rank. Rank r reduces slice r of the chunk across every
// rank's input (read in place from registered or same-process buffers, otherwise from the copy each rank staged),
// straight into its output, and publishes it; then every rank copies the other ranks' slices into its output. Each
// element is reduced by exactly one rank, in rank order, so every rank ends with the same bits.
//
// Why chunks: the staging copy, the reduction and the gather of different chunks overlap across ranks (while rank
// r gathers chunk j, its peers already stage chunk j + 1), and a chunk's staging stays in cache between the rank
// that writes it and the ranks that read it, so memory traffic is close to the minimum of reading the input and
// writing the output once. Per chunk the order is: reduce own slice of j, stage j + 1, gather j.
#include <cstring>
#include <vector>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"
#include "transport/shm/stream_copy.hpp"

namespace tern::shm {

void pipelinedAllReduce(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t e = c.esize;
  const bool useSlot = c.inStaged || c.outStaged;
  std::vector<const void*>& srcs = c.srcs;
  srcs.resize(n);

  // Only the peers' slices are staged: this rank reads its own slice straight from its input.
  auto stageIn = [&](uint32_t j) {
    uint32_t g = c.chunkBase + j;
    if (useSlot) c.acquireSlot(g);
    if (c.inStaged) {
      const size_t begin = c.chunkBegin(j), len = c.chunkEnd(j) - begin;
      const size_t lo = sliceBegin(len, me, n, e), hi = sliceBegin(len, me + 1, n, e);
      const char* src = c.in + begin * e;
      char* dst = c.stage(me, g);
      copyBytes(dst, src, lo * e);
      copyBytes(dst + hi * e, src + hi * e, (len - hi) * e);
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
    srcs[me] = c.in + (begin + lo) * e;  // in place: the output slice may be this very input (reduceInOrder allows it)
    char* dst = c.out + (begin + lo) * e;
    if (c.outStaged) {
      // Reduce into the (cached) slot, where the peers read it, then copy it out.
      char* result = c.stage(me, g) + lo * e;
      reduceInOrder(result, srcs.data(), n, hi - lo, a.dtype, a.op, c.avgDivisor, c.tmp);
      copyOut(dst, result, (hi - lo) * e, c.streamOut);
    } else {
      reduceInOrder(dst, srcs.data(), n, hi - lo, a.dtype, a.op, c.avgDivisor, c.tmp);
    }
    c.post(&RankControl::red, g + 1);

    if (j + 1 < c.chunks) stageIn(j + 1);

    for (int i = 1; i < n; ++i) {
      const int p = (me + i) % n;
      const size_t plo = sliceBegin(len, p, n, e), phi = sliceBegin(len, p + 1, n, e);
      c.wait(p, &RankControl::red, g + 1, "reduced slice");
      if (phi == plo) continue;
      const char* src = c.peerOut[p] ? c.peerOut[p] + (begin + plo) * e : c.stage(p, g) + plo * e;
      copyOut(c.out + (begin + plo) * e, src, (phi - plo) * e, c.streamOut);
    }
    c.post(&RankControl::done, g + 1);
  }
  // Peers read our buffers in place until they are done with the last chunk.
  if (!c.inStaged || !c.outStaged) c.waitAllPeers(&RankControl::done, c.chunkBase + c.chunks, "end of the call");
}

}  // namespace tern::shm
