// Allreduce of buffers that every rank addresses directly (registered ternMemAlloc memory mapped by the peers, or
// ranks that are threads of one process): one pass, nothing staged, one wait at the end of the call.
//
// Rank r owns slice r of the buffer. Piece by piece it reduces slice r of every rank's input, in rank order, into
// its own output and copies the result into every peer's output while it is still in cache. The pipelined path
// does the same arithmetic but synchronises twice per chunk (input ready, slice reduced), which at 1-16 MiB costs
// more than the copies (2 ranks, registered buffers: 9.1-10.1 GB/s pipelined).
//
// Safety: the same argument as the CMA allreduce (cma_allreduce.cpp). Slice r of any input is read only by rank r,
// which reads each piece before it writes that piece of any output (the same memory when a peer runs in place);
// every rank is inside the call (describeCall's exchange) before anyone touches its buffers, and nobody leaves
// before every rank has posted `done`.
#include <algorithm>
#include <cstring>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"
#include "transport/shm/stream_copy.hpp"

namespace tern::shm {

void mappedAllReduce(DirectCall& c) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t e = c.esize;
  // Pieces small enough that the result is still in cache when it is copied to the peers (and reduceInOrder's
  // accumulator, c.tmp, holds one).
  const size_t pieceElems = std::max<size_t>(1, kStageSlotBytes / e);
  std::vector<const void*>& srcs = c.srcs;
  srcs.resize(n);
  const size_t lo = sliceBegin(a.count, me, n, e), hi = sliceBegin(a.count, me + 1, n, e);
  // A peer's output slice is not read again in this call, so past the size that fits the last-level cache the
  // copies into it skip the caches (2 ranks, 32-256 MiB out of place: 6.3-10.2 -> 7.4-12.2 GB/s). In place that
  // slice is the peer's input, which this rank just read and still holds: ordinary stores hit (streaming ones
  // measured 9-10 instead of 12-20 GB/s there).
  const bool stream = a.count * e > kMappedStreamingBytes;
  for (size_t off = lo; off < hi; off += pieceElems) {
    const size_t m = std::min(pieceElems, hi - off);
    for (int p = 0; p < n; ++p) srcs[p] = (p == me ? c.in : c.peerIn[p]) + off * e;
    char* result = c.out + off * e;
    reduceInOrder(result, srcs.data(), n, m, a.dtype, a.op, c.avgDivisor, c.tmp);
    for (int i = 1; i < n; ++i) {
      const int p = (me + i) % n;
      if (stream && c.peerOut[p] != c.peerIn[p]) {
        streamCopy(c.peerOut[p] + off * e, result, m * e);
      } else {
        copyBytes(c.peerOut[p] + off * e, result, m * e);
      }
    }
  }
  c.finishOnePass();
}

}  // namespace tern::shm
