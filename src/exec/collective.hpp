// What a collective call asks for, independent of buffers: the key under which schedules are built and cached.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tern/tern.h"

namespace tern {

namespace compress {
class Codec;
}  // namespace compress

enum class Collective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kAlltoAllv,
  kPointToPoint,
  kBarrier,
  kCount
};

const char* collectiveName(Collective c);
// The collective of a name ("allreduce", "all_reduce", "AllGather", ...); *ok false (and kCount) when none.
Collective parseCollectiveName(const std::string& name, bool* ok);

// One send or receive of a point-to-point group; offsets are into the op's input (sends) or output (receives)
// buffer, which the communicator lays out as a gather of the user's buffers.
struct PointToPoint {
  bool isSend = false;
  int peer = -1;
  size_t offset = 0;  // bytes
  size_t bytes = 0;
};

struct CollArgs {
  Collective coll = Collective::kAllReduce;
  // Elements: AllReduce/Broadcast/Reduce: count; AllGather: sendcount; ReduceScatter: recvcount; AlltoAll: count
  // per peer.
  size_t count = 0;
  ternDataType_t dtype = ternFloat32;
  ternRedOp_t op = ternSum;
  int root = 0;
  bool inPlace = false;
  // AlltoAllv, in elements.
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  // Point-to-point group.
  std::vector<PointToPoint> p2p;

  // Back to the defaults above, the vectors emptied but keeping their capacity (recycled operations,
  // core/operation_pool.cpp); a field added above is reset here too.
  void reset() {
    coll = Collective::kAllReduce;
    count = 0;
    dtype = ternFloat32;
    op = ternSum;
    root = 0;
    inPlace = false;
    for (auto* v : {&sendCounts, &sendDispls, &recvCounts, &recvDispls}) v->clear();
    p2p.clear();
  }
};

// Sizes in bytes of the user's input and output buffers of a call (what schedules may reach into): AllGather's
// output and ReduceScatter's input hold nranks blocks, AlltoAll's both, AlltoAllv's reach the furthest
// displacement plus count; point-to-point groups and barriers have none (their transfers carry their own sizes).
size_t inputBytes(const CollArgs& args, int nranks);
size_t outputBytes(const CollArgs& args, int nranks);

// Tuning knobs every builder may read. Defaults suit TCP on loopback; transports can override.
struct BuildOptions {
  size_t pipelineChunkBytes = 512 * 1024;  // ring/chain/tree pipelining granularity
  // Rank order of rings and chains (a permutation of 0..nranks-1), chosen from the topology so that neighbours
  // share a host/NUMA node/NIC. Empty means identity.
  std::vector<int> ringOrder;
  // Host index of every rank (ranks with the same value share a node). Empty means all on one host. Hierarchical
  // algorithms use it.
  std::vector<int> hostOf;
  // Compressed collectives: the codec whose payload sizes the schedule is laid out for.
  const compress::Codec* codec = nullptr;
  // Compressed two-phase allreduce: the tensor is processed in pieces of this many input bytes (as fp32), each a
  // complete two-phase exchange, so that encoding piece k+1 overlaps the wire time of piece k.
  size_t compressedPieceBytes = 4 * 1024 * 1024;
};

}  // namespace tern
