#include <algorithm>
#include <cctype>
#include <utility>

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

Collective parseCollectiveName(const std::string& name, bool* ok) {
  static const std::pair<const char*, Collective> names[] = {{"allreduce", Collective::kAllReduce},
                                                             {"allgather", Collective::kAllGather},
                                                             {"reducescatter", Collective::kReduceScatter},
                                                             {"broadcast", Collective::kBroadcast},
                                                             {"reduce", Collective::kReduce},
                                                             {"alltoall", Collective::kAlltoAll},
                                                             {"alltoallv", Collective::kAlltoAllv},
                                                             {"barrier", Collective::kBarrier}};
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  lower.erase(std::remove(lower.begin(), lower.end(), '_'), lower.end());
  for (const auto& [n, c] : names) {
    if (lower == n) {
      *ok = true;
      return c;
    }
  }
  *ok = false;
  return Collective::kCount;
}

}  // namespace tern
