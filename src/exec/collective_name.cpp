#include "exec/collective.hpp"

namespace tern {

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAlltoAll:
      return "alltoall";
    case Collective::kAlltoAllv:
      return "alltoallv";
    case Collective::kPointToPoint:
      return "sendrecv";
    case Collective::kBarrier:
      return "barrier";
    default:
      return "?";
  }
}

}  // namespace tern
