// Ring allreduce: a ring reduce-scatter followed by a ring all-gather, both chunked and pipelined (see
// ring_engine.hpp). Bandwidth-optimal: every rank sends and receives 2(n-1)/n of the buffer, and every link of the
// ring is busy in every step. Latency is 2(n-1) message hops, so small messages prefer "rd".
//
// Reduce-scatter accumulates in the output buffer (which the all-gather overwrites with final values anyway), so
// received chunks need only a handful of scratch slots, freed by the local reduction: scratch is bounded by a few
// chunks whatever the message size. The owner of each block divides by n (avg) right after the last reduction and
// before the block enters the all-gather, so every rank receives the same finalized bits.
#include "algorithms/registry.hpp"
#include "algorithms/ring_engine.hpp"

namespace tern {

Schedule buildRingAllReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("ring", args, rank, nranks);
  const std::vector<int> order = algo::ringOrder(options, nranks);
  algo::Ring ring{order, algo::positionOf(order, rank)};
  std::vector<algo::Block> blocks(nranks);
  for (int q = 0; q < nranks; ++q) blocks[q] = {algo::evenPart(args.count, nranks, q)};
  const size_t chunk = algo::chunkElems(options, program.esize());

  algo::RingReduceScatterPlan rs;
  rs.ring = ring;
  rs.blocks = blocks;
  rs.source = program.inputLocator();
  rs.accumulator = program.outputLocator();
  rs.result = program.outputLocator();
  rs.finalize = true;
  rs.chunkElems = chunk;
  algo::emitRingReduceScatter(program, rs);

  algo::RingAllGatherPlan ag;
  ag.ring = ring;
  ag.blocks = blocks;
  ag.ownSource = program.outputLocator();
  ag.dest = program.outputLocator();
  ag.chunkElems = chunk;
  algo::emitRingAllGather(program, ag);
  return program.take();
}

}  // namespace tern
