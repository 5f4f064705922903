// The buffer sizes of a collective call, for the executor's bounds check.
#include <algorithm>

#include "base/dtype.hpp"
#include "exec/collective.hpp"

namespace tern {

namespace {

size_t furthest(const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
  size_t end = 0;
  for (size_t i = 0; i < counts.size() && i < displs.size(); ++i) end = std::max(end, displs[i] + counts[i]);
  return end;
}

}  // namespace

size_t inputBytes(const CollArgs& args, int nranks) {
  const size_t block = args.count * dataTypeSize(args.dtype);
  switch (args.coll) {
    case Collective::kReduceScatter:
    case Collective::kAlltoAll:
      return block * static_cast<size_t>(nranks);
    case Collective::kAlltoAllv:
      return furthest(args.sendCounts, args.sendDispls) * dataTypeSize(args.dtype);
    case Collective::kPointToPoint:
    case Collective::kBarrier:
    case Collective::kCount:
      return 0;
    default:
      return block;
  }
}

size_t outputBytes(const CollArgs& args, int nranks) {
  const size_t block = args.count * dataTypeSize(args.dtype);
  switch (args.coll) {
    case Collective::kAllGather:
    case Collective::kAlltoAll:
      return block * static_cast<size_t>(nranks);
    case Collective::kAlltoAllv:
      return furthest(args.recvCounts, args.recvDispls) * dataTypeSize(args.dtype);
    case Collective::kPointToPoint:
    case Collective::kBarrier:
    case Collective::kCount:
      return 0;
    default:
      return block;
  }
}

}  // namespace tern
