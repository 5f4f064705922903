// Hierarchical allgather:
//  1. inter-node ring all-gather among the ranks with the same local index: afterwards local rank l of every node
//     holds the blocks of local rank l of all nodes;
//  2. intra-node ring all-gather of those collections.
// Each block crosses the network once per node, and every rank of a node uses the network at the same time. With
// uneven nodes, local index j of a smaller node is served by its local rank j mod g (hier_layout.hpp), which then
// takes part in several inter-node rings (in index order on every rank, so messages between a pair that meets in
// two rings still match in order). Received blocks land directly in the output; no scratch.
#include "algorithms/hier_layout.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/ring_engine.hpp"

namespace tern {

Schedule buildHierAllGather(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("hier", args, rank, nranks);
  const algo::HostLayout h = algo::hostLayout(options, rank, nranks);
  const size_t chunk = algo::chunkElems(options, program.esize());
  const size_t count = args.count;
  const int numNodes = static_cast<int>(h.nodes.size());
  auto blockOf = [count](int r) { return algo::ElemRange{static_cast<size_t>(r) * count, count}; };

  // 1. Inter-node: for each local index j this rank serves, gather the blocks of local rank j of every node.
  for (size_t j = 0; j < h.slices; ++j) {
    if (!h.mine(j)) continue;
    algo::RingAllGatherPlan ag;
    ag.ring = {h.group(j), h.myNode};
    ag.blocks.resize(numNodes);
    for (int k = 0; k < numNodes; ++k) {
      if (j < h.nodes[k].size()) ag.blocks[k] = {blockOf(h.nodes[k][j])};  // nodes without local rank j add nothing
    }
    ag.ownSource = program.inputLocator(static_cast<size_t>(rank) * count);  // only read for the own block
    ag.dest = program.outputLocator();
    ag.chunkElems = chunk;
    algo::emitRingAllGather(program, ag);
  }

  // 2. Intra-node: each local rank shares everything it gathered.
  const int g = h.nodeSize(h.myNode);
  if (g > 1) {
    algo::RingAllGatherPlan ag;
    ag.ring = {h.nodes[h.myNode], h.myLocal};
    ag.blocks.resize(g);
    for (size_t j = 0; j < h.slices; ++j) {
      for (int k = 0; k < numNodes; ++k) {
        if (j < h.nodes[k].size()) ag.blocks[j % g].push_back(blockOf(h.nodes[k][j]));
      }
    }
    ag.ownSource = program.outputLocator();
    ag.dest = program.outputLocator();
    ag.chunkElems = chunk;
    algo::emitRingAllGather(program, ag);
  }
  return program.take();
}

}  // namespace tern
