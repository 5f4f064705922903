// Small collectives in one phase: every rank copies its whole input into its small area, posts, waits for every
// peer's post, and computes its whole result from the peers' small areas. One synchronisation instead of the
// two (or more) of a reduce-then-gather, which is what matters when the data is a few cache lines: every rank
// reduces everything, in rank order, so all of them get the same bits without a second exchange.
//
// Consecutive small calls alternate between the two halves of the small area. Before a rank writes half h for
// call k, it waits until every peer has posted call k - 1: a peer posts k - 1 only after finishing call k - 2, the
// last one that read half h.
#include <cstring>
#include <vector>

#include "core/dtype.hpp"
#include "transport/shm/direct_call.hpp"

namespace tern::shm {

namespace {

size_t inputBytes(const DirectCall& c) {
  const CollArgs& a = *c.args;
  switch (a.coll) {
    case Collective::kReduceScatter:
      return a.count * c.esize * static_cast<size_t>(c.n);
    case Collective::kBroadcast:
      return c.rank == a.root ? a.count * c.esize : 0;
    case Collective::kBarrier:
      return 0;
    default:
      return a.count * c.esize;
  }
}

}  // namespace

void smallCollective(DirectCall& c, uint32_t seq) {
  const CollArgs& a = *c.args;
  const int n = c.n;
  const uint32_t half = seq & 1;
  c.waitAllPeers(&RankControl::small, seq - 1, "previous small call");
  char* mine = c.mesh->small(c.rank, half);
  reinterpret_cast<SmallHeader*>(mine)->argsKey = argsKey(a);
  size_t bytes = inputBytes(c);
  if (bytes > 0) std::memcpy(mine + sizeof(SmallHeader), c.in, bytes);
  c.post(&RankControl::small, seq);
  c.waitAllPeers(&RankControl::small, seq, "small-call input");

  std::vector<const char*> data(n);
  for (int p = 0; p < n; ++p) {
    const char* area = c.mesh->small(p, half);
    if (reinterpret_cast<const SmallHeader*>(area)->argsKey != argsKey(a)) {
      throwError(ternInvalidUsage,
                 "rank %d: %s arguments differ from rank %d's (count, datatype, op and root must "
                 "agree on every rank)",
                 c.rank, c.what, p);
    }
    data[p] = area + sizeof(SmallHeader);
  }
  const size_t blockBytes = a.count * c.esize;
  switch (a.coll) {
    case Collective::kAllReduce:
      reduceInOrder(c.out, reinterpret_cast<const void* const*>(data.data()), n, a.count, a.dtype, a.op, c.avgDivisor,
                    c.tmp);
      break;
    case Collective::kReduce:
      if (c.rank == a.root) {
        reduceInOrder(c.out, reinterpret_cast<const void* const*>(data.data()), n, a.count, a.dtype, a.op, c.avgDivisor,
                      c.tmp);
      }
      break;
    case Collective::kReduceScatter:
      for (int p = 0; p < n; ++p) data[p] += blockBytes * static_cast<size_t>(c.rank);
      reduceInOrder(c.out, reinterpret_cast<const void* const*>(data.data()), n, a.count, a.dtype, a.op, c.avgDivisor,
                    c.tmp);
      break;
    case Collective::kAllGather:
      for (int p = 0; p < n; ++p) {
        char* dst = c.out + blockBytes * static_cast<size_t>(p);
        if (blockBytes > 0 && dst != data[p]) std::memcpy(dst, data[p], blockBytes);
      }
      break;
    case Collective::kBroadcast:
      if (blockBytes > 0) std::memcpy(c.out, data[a.root], blockBytes);
      break;
    default:
      break;
  }
}

}  // namespace tern::shm
