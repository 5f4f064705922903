// Chain broadcast: the ranks form a chain starting at the root (in ring order, rotated to the root); each rank
// receives the buffer from its predecessor and forwards it to its successor, chunk by chunk. With C chunks, the
// last rank has the data after (n-1) + (C-1) chunk times instead of (n-1) whole-buffer times: for large messages
// every link streams at full bandwidth at once, which is why NCCL broadcasts along rings. Small messages prefer
// "binomial" (log n hops).
//
// Chunks land directly in the output and are forwarded from there as soon as each arrives; the root sends from its
// input (so its own input-to-output copy is off the critical path) and never waits. Non-root inputs are never
// touched (they may be null).
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

Schedule buildChainBroadcast(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("chain", args, rank, nranks);
  const std::vector<int> order = algo::ringOrder(options, nranks);
  const int rootPos = algo::positionOf(order, args.root);
  const int q = algo::mod(algo::positionOf(order, rank) - rootPos, nranks);  // distance from the root
  const bool hasNext = q + 1 < nranks;
  const int next = hasNext ? order[algo::mod(rootPos + q + 1, nranks)] : -1;
  const int prev = q > 0 ? order[algo::mod(rootPos + q - 1, nranks)] : -1;
  const auto pcs = algo::pieces({{0, args.count}}, algo::chunkElems(options, program.esize()));
  for (const algo::ElemRange& pc : pcs) {
    if (q == 0) {
      if (hasNext) program.send(next, program.inputAt(pc));
      program.copy(program.outputAt(pc), program.inputAt(pc));
    } else {
      program.recv(prev, program.outputAt(pc));
      if (hasNext) program.send(next, program.outputAt(pc));
    }
  }
  return program.take();
}

}  // namespace tern
