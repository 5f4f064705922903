// Ring allgather: n-1 steps; in each, every rank forwards to its successor the block it received in the previous
// step (its own block first). Each block travels the ring once, so every link carries (n-1)/n of the output:
// bandwidth-optimal, with n-1 message hops of latency. Blocks are chunked so that forwarding a chunk overlaps
// receiving the next one; received chunks land directly in the output and are forwarded from there (no scratch).
#include "algorithms/registry.hpp"
#include "algorithms/ring_engine.hpp"

namespace tern {

Schedule buildRingAllGather(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("ring", args, rank, nranks);
  const std::vector<int> order = algo::ringOrder(options, nranks);
  algo::RingAllGatherPlan ag;
  ag.ring = {order, algo::positionOf(order, rank)};
  ag.blocks.resize(nranks);
  // Output layout: rank r's block at r*count. Position q carries the block of the rank at that position.
  for (int q = 0; q < nranks; ++q) ag.blocks[q] = {{static_cast<size_t>(order[q]) * args.count, args.count}};
  ag.ownSource = program.inputLocator(static_cast<size_t>(rank) * args.count);
  ag.dest = program.outputLocator();
  ag.chunkElems = algo::chunkElems(options, program.esize());
  algo::emitRingAllGather(program, ag);
  return program.take();
}

}  // namespace tern
