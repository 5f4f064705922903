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

// The input buffer (input true) or the output buffer of a call.
size_t bufferBytes(const CollArgs& args, int nranks, bool input) {
  const size_t esize = dataTypeSize(args.dtype);
  const size_t block = args.count * esize;
  const size_t all = block * static_cast<size_t>(nranks);
  switch (args.coll) {
    case Collective::kAllGather:
      return input ? block : all;
    case Collective::kReduceScatter:
      return input ? all : block;
    case Collective::kAlltoAll:
      return all;
    case Collective::kAlltoAllv:
      return esize * (input ? furthest(args.sendCounts, args.sendDispls) : furthest(args.recvCounts, args.recvDispls));
    case Collective::kPointToPoint:
    case Collective::kBarrier:
    case Collective::kCount:
      return 0;
    default:
      return block;
  }
}

}  // namespace

size_t inputBytes(const CollArgs& args, int nranks) { return bufferBytes(args, nranks, true); }
size_t outputBytes(const CollArgs& args, int nranks) { return bufferBytes(args, nranks, false); }

}  // namespace tern
