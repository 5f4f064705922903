// Small collectives in one phase: every rank copies its whole input into its small area (inputs of up to
// kInlineBytes into the flag's own cache line), posts, waits for every peer's post, and computes its whole result from
// the peers' small areas. One synchronisation instead of the two (or more) of a reduce-then-gather, which is what
// matters when the data is a few cache lines: every rank reduces everything, in rank order, so all of them get the
// same bits without a second exchange. A tiny allreduce costs each rank one cache-line transfer per peer. An
// all-to-all with equal counts runs here too: its blocks' places follow from the arguments, so it needs none of the
// tables direct_alltoall.cpp exchanges, only the flag and the blocks.
//
// Consecutive small calls alternate between the two halves of the small area (and two flag lines). Before a rank
// writes half h for call k, it waits until every peer has posted call k - 1: a peer posts k - 1 only after finishing
// call k - 2, the last one that read half h.
#include <cstring>
#include <vector>

#include "algorithms/shm/direct_call.hpp"
#include "base/copy_bytes.hpp"
#include "base/dtype.hpp"

namespace tern::shm {

namespace {

// Bytes every rank that contributes data posts (for broadcast, only the root contributes).
size_t payloadBytes(const DirectCall& c) {
  const CollArgs& a = *c.args;
  switch (a.coll) {
    case Collective::kReduceScatter:
    case Collective::kAlltoAll:
      return a.count * c.esize * static_cast<size_t>(c.n);
    case Collective::kBarrier:
      return 0;
    default:
      return a.count * c.esize;
  }
}

}  // namespace

void smallCollective(DirectCall& c, uint32_t seq) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const uint32_t half = seq & 1;
  const uint64_t key = argsKey(a);
  const size_t bytes = payloadBytes(c);
  const bool inlined = bytes <= kInlineBytes;  // the same answer on every rank: it depends on the arguments only
  // The half (and line) this call uses was last used by call seq - 2; a peer that has posted seq - 1 is done with it.
  for (int i = 1; i < n; ++i) {
    const int p = (me + i) % n;
    c.waitWord(p, c.ctrl(p).small[(seq - 1) & 1].seq, seq - 1, "previous small call");
  }
  SmallLine& line = c.ctrl(me).small[half];
  const bool contributes = a.coll != Collective::kBroadcast || me == a.root;
  const size_t blockBytes = a.count * c.esize;
  if (a.coll == Collective::kAlltoAll && !inlined) {
    // Only the blocks for peers: each reads its own at its rank's offset.
    char* area = c.mesh->small(me, half);
    for (int p = 0; p < n && blockBytes > 0; ++p) {
      const size_t at = blockBytes * static_cast<size_t>(p);
      if (p != me) copyBytes(area + at, c.in + at, blockBytes);
    }
  } else if (contributes && bytes > 0) {
    copyBytes(inlined ? line.payload : c.mesh->small(me, half), c.in, bytes);
  }
  line.argsKey = key;
  line.count = a.count;
  c.postWord(line.seq, seq);

  std::vector<const void*>& data = c.srcs;
  data.resize(n);
  for (int i = 0; i < n; ++i) {
    const int p = (me + i) % n;
    SmallLine& theirs = c.ctrl(p).small[half];
    if (p != me) c.waitWord(p, theirs.seq, seq, "small-call input");
    if (theirs.argsKey != key) {
      throwError(ternInvalidUsage,
                 "rank %d: %s arguments differ from rank %d's (count %zu vs %llu; count, datatype, op and root must "
                 "agree on every rank)",
                 me, c.what, p, a.count, static_cast<unsigned long long>(theirs.count));
    }
    data[p] = inlined ? theirs.payload : c.mesh->small(p, half);
  }
  switch (a.coll) {
    case Collective::kAllReduce:
      reduceInOrder(c.out, data.data(), n, a.count, a.dtype, a.op, c.avgDivisor, c.tmp);
      break;
    case Collective::kReduce:
      if (c.rank == a.root) {
        reduceInOrder(c.out, data.data(), n, a.count, a.dtype, a.op, c.avgDivisor, c.tmp);
      }
      break;
    case Collective::kReduceScatter:
      for (int p = 0; p < n; ++p) data[p] = static_cast<const char*>(data[p]) + blockBytes * c.rank;
      reduceInOrder(c.out, data.data(), n, a.count, a.dtype, a.op, c.avgDivisor, c.tmp);
      break;
    case Collective::kAllGather:
      for (int p = 0; p < n; ++p) {
        char* dst = c.out + blockBytes * static_cast<size_t>(p);
        if (blockBytes > 0) copyBytes(dst, data[p], blockBytes);
      }
      break;
    case Collective::kBroadcast:
      if (blockBytes > 0) copyBytes(c.out, data[a.root], blockBytes);
      break;
    case Collective::kAlltoAll:
      // The own block moves within this rank's buffers (in place: not at all); every peer's comes from its area.
      for (int p = 0; p < n && blockBytes > 0; ++p) {
        char* dst = c.out + blockBytes * static_cast<size_t>(p);
        const char* src = p == me ? c.in + blockBytes * static_cast<size_t>(me)
                                  : static_cast<const char*>(data[p]) + blockBytes * static_cast<size_t>(me);
        if (dst != src) copyBytes(dst, src, blockBytes);
      }
      break;
    default:
      break;
  }
}

}  // namespace tern::shm
