// Hierarchical reduce-scatter:
//  1. intra-node ring reduce-scatter: local rank l receives the node's partial sums of the blocks destined to
//     local rank l of every node (kept in scratch: the output holds only the rank's own block);
//  2. inter-node ring reduce-scatter among the ranks with the same local index, which delivers each block to its
//     owner and divides it there (avg).
// The network carries (N-1)/N of the data per node, spread over all ranks of the node. With uneven nodes, local
// index j of a smaller node is served by its local rank j mod g (hier_layout.hpp); a node without a local rank j
// takes part in that index's ring with an empty block of its own.
//
// Both phases use the ring engine's slot mode (partials travel in bounded scratch slots); the node partials between
// the phases take scratch proportional to the blocks this rank serves, about 1/g of the input.
#include "algorithms/hier_layout.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/ring_engine.hpp"

namespace tern {

Schedule buildHierReduceScatter(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("hier", args, rank, nranks);
  const algo::HostLayout h = algo::hostLayout(options, rank, nranks);
  const size_t chunk = algo::chunkElems(options, program.esize());
  const size_t count = args.count;
  const int numNodes = static_cast<int>(h.nodes.size());
  const int g = h.nodeSize(h.myNode);
  auto blockOf = [count](int r) { return algo::ElemRange{static_cast<size_t>(r) * count, count}; };

  // Blocks destined to local index j of every node, served on this node by local rank j mod g.
  std::vector<algo::Block> nodeBlocks(g);
  for (size_t j = 0; j < h.slices; ++j) {
    for (int k = 0; k < numNodes; ++k) {
      if (j < h.nodes[k].size()) nodeBlocks[j % g].push_back(blockOf(h.nodes[k][j]));
    }
  }

  // 1. Intra-node reduce-scatter. The node partials of the blocks this rank serves go to scratch, packed in the
  // order of nodeBlocks[myLocal]; partial() finds a block's place there.
  algo::Locator partial = program.inputLocator();
  if (g > 1) {
    const algo::Block& served = nodeBlocks[h.myLocal];
    std::vector<size_t> rankSlot(nranks, SIZE_MAX);
    for (size_t i = 0; i < served.size(); ++i) rankSlot[served[i].offset / (count == 0 ? 1 : count)] = i;
    const size_t base = program.allocScratch(served.size() * count * program.esize());
    const size_t esize = program.esize();
    partial = [rankSlot, base, count, esize](size_t off, size_t cnt) {
      const size_t r = off / count, within = off % count;
      return Span{BufferId::kScratch, base + (rankSlot[r] * count + within) * esize, cnt * esize};
    };
    algo::RingReduceScatterPlan rs;
    rs.ring = {h.nodes[h.myNode], h.myLocal};
    rs.blocks = nodeBlocks;
    rs.source = program.inputLocator();
    rs.result = partial;
    rs.chunkElems = chunk;
    if (count > 0) algo::emitRingReduceScatter(program, rs);
  }

  // 2. Inter-node reduce-scatter per local index served, in index order on every rank.
  for (size_t j = 0; j < h.slices; ++j) {
    if (!h.mine(j)) continue;
    algo::RingReduceScatterPlan rs;
    rs.ring = {h.group(j), h.myNode};
    rs.blocks.resize(numNodes);
    for (int k = 0; k < numNodes; ++k) {
      if (j < h.nodes[k].size()) rs.blocks[k] = {blockOf(h.nodes[k][j])};
    }
    rs.source = partial;
    // Only this rank's own block ends here (j == myLocal); for other indices the own block is empty.
    rs.result = program.outputLocator(static_cast<size_t>(rank) * count);
    rs.finalize = true;
    rs.chunkElems = chunk;
    if (count > 0) algo::emitRingReduceScatter(program, rs);
  }
  return program.take();
}

}  // namespace tern
