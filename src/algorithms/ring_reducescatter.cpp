// Ring reduce-scatter: n-1 steps; in each, every rank receives a partial sum of one block from its predecessor,
// adds its own contribution and passes it on; the block destined to rank r starts at r's successor and completes
// at r. Bandwidth-optimal ((n-1)/n of the input per link), n-1 message hops.
//
// The output holds only the rank's own block, so partials travel in scratch slots ("slot mode" of the ring
// engine): reduced in place in the slot they arrived in and sent on from there. Chunks are walked in small windows
// so that the bounded slot pool cannot deadlock under a rendezvous transport (see ring_engine.hpp).
#include "algorithms/registry.hpp"
#include "algorithms/ring_engine.hpp"

namespace tern {

Schedule buildRingReduceScatter(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("ring", args, rank, nranks);
  const std::vector<int> order = algo::ringOrder(options, nranks);
  algo::RingReduceScatterPlan rs;
  rs.ring = {order, algo::positionOf(order, rank)};
  rs.blocks.resize(nranks);
  // Input layout: the block destined to rank r at r*count; it must end at the position of rank r.
  for (int q = 0; q < nranks; ++q) rs.blocks[q] = {{static_cast<size_t>(order[q]) * args.count, args.count}};
  rs.source = program.inputLocator();
  rs.result = program.outputLocator(static_cast<size_t>(rank) * args.count);
  rs.finalize = true;
  rs.chunkElems = algo::chunkElems(options, program.esize());
  algo::emitRingReduceScatter(program, rs);
  return program.take();
}

}  // namespace tern
