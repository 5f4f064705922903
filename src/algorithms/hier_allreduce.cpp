// Hierarchical allreduce, for clusters where the network between nodes is much slower than the links inside one:
//  1. intra-node ring reduce-scatter: local rank l ends with the node's partial sum of its slices;
//  2. inter-node allreduce of each slice, among the ranks responsible for it (one per node): a ring, or with two
//     nodes a plain exchange (see below);
//  3. intra-node ring all-gather of the slices.
// Every rank of a node talks to the network at once, each for 1/g of the data, so the inter-node traffic per
// node is 2(N-1)/N of the buffer (N nodes), not the 2(n-1)/n x g of a flat ring that crosses node boundaries
// several times. See hier_layout.hpp for how slices are shared out when nodes have different sizes.
//
// Partials live in the output buffer throughout (accumulate mode of the ring engine); the average's division is
// applied once, by the rank that completes each piece in step 2, before any copy of it is made, so every rank
// ends with the same bits. All phases are chunked and pipelined and run back to back: a chunk enters the next
// phase as soon as it is ready.
#include "algorithms/hier_layout.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/ring_engine.hpp"

namespace tern {

namespace {
constexpr size_t kExchangeSlots = 4;

// Step 2 with two nodes: each side sends its whole partial of the slice and combines what it receives, node 0's
// partial first on both sides so both get the same bits. It moves the same bytes each way as the two-rank ring
// (half in its reduce-scatter, half in its all-gather), but nothing waits on the other side's reduction: a node
// that is ready early ships all of its partial while the other is still computing (a DDP bucket whose ranks
// finish backward at different times), and the late node's data is the only transfer left. The ring's all-gather
// half can only start after the late node's reduce-scatter half has arrived, so it ends at least one pipeline
// chunk later, and that tail sits on every step's critical path.
void emitTwoNodeExchange(algo::Program& program, const algo::Locator& partial, const algo::ElemRange& slice, int peer,
                         bool mineFirst, size_t chunkElems) {
  const auto pcs = algo::pieces({slice}, chunkElems);
  algo::SlotPool pool(program, algo::maxCount(pcs) * program.esize(), kExchangeSlots);
  for (const algo::ElemRange& pc : pcs) program.send(peer, partial(pc.offset, pc.count));
  for (const algo::ElemRange& pc : pcs) {
    const size_t slot = pool.acquire();
    const Span in = program.scratchAt(slot, pc.count);
    const Span mine = partial(pc.offset, pc.count);
    program.recv(peer, in);
    program.reduce(program.outputAt(pc), mineFirst ? mine : in, mineFirst ? in : mine);
    program.finalizeAvg(program.outputAt(pc));
    pool.release(slot);
  }
}
}  // namespace

Schedule buildHierAllReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("hier", args, rank, nranks);
  const algo::HostLayout h = algo::hostLayout(options, rank, nranks);
  const size_t chunk = algo::chunkElems(options, program.esize());
  const std::vector<int>& node = h.nodes[h.myNode];
  const int g = h.nodeSize(h.myNode);
  const int numNodes = static_cast<int>(h.nodes.size());
  auto slice = [&](size_t j) { return algo::evenPart(args.count, h.slices, j); };

  std::vector<algo::Block> nodeBlocks(g);
  for (size_t j = 0; j < h.slices; ++j) nodeBlocks[j % g].push_back(slice(j));

  // 1. Intra-node reduce-scatter into the output (a single-rank node's partial is simply its input).
  if (g > 1) {
    algo::RingReduceScatterPlan rs;
    rs.ring = {node, h.myLocal};
    rs.blocks = nodeBlocks;
    rs.source = program.inputLocator();
    rs.accumulator = program.outputLocator();
    rs.result = program.outputLocator();
    rs.chunkElems = chunk;
    algo::emitRingReduceScatter(program, rs);
  }
  const algo::Locator partial = g > 1 ? program.outputLocator() : program.inputLocator();

  // 2. Inter-node allreduce of each slice this rank is responsible for, in slice order on every rank (groups of
  // different slices may link the same pair of ranks, whose messages must then match in order).
  for (size_t j = 0; j < h.slices; ++j) {
    if (!h.mine(j)) continue;
    if (numNodes == 2) {
      const std::vector<int> pair = h.group(j);
      emitTwoNodeExchange(program, partial, slice(j), pair[1 - h.myNode], h.myNode == 0, chunk);
      continue;
    }
    algo::Ring ring{h.group(j), h.myNode};
    std::vector<algo::Block> blocks(numNodes);
    const algo::ElemRange s = slice(j);
    for (int k = 0; k < numNodes; ++k) blocks[k] = {algo::evenPart(s.count, numNodes, k, s.offset)};
    algo::RingReduceScatterPlan rs;
    rs.ring = ring;
    rs.blocks = blocks;
    rs.source = partial;
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
  }

  // 3. Intra-node all-gather of the slices.
  if (g > 1) {
    algo::RingAllGatherPlan ag;
    ag.ring = {node, h.myLocal};
    ag.blocks = nodeBlocks;
    ag.ownSource = program.outputLocator();
    ag.dest = program.outputLocator();
    ag.chunkElems = chunk;
    algo::emitRingAllGather(program, ag);
  }
  return program.take();
}

}  // namespace tern
