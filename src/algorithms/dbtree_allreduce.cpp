// Double binary tree allreduce (as in NCCL 2.4+): two binary trees over the same ranks, each reducing and
// broadcasting half of the buffer (tree_engine.hpp). The second tree is the first mirrored (even n) or shifted (odd
// n), so a rank that is a leaf in one tree is an inner node in the other: every rank does about the same amount of
// sending and receiving in total, which brings the tree's bandwidth up to the ring's while keeping its logarithmic
// latency.
//
// Both trees run concurrently. A pair of ranks can be linked in both trees (parent in one, child in the other),
// sharing one in-order message stream, so the interleaving of the two trees' messages is fixed identically on every
// rank: for t = 0, 1, ...: up(tree 0, t), up(tree 1, t), down(tree 0, t - lag), down(tree 1, t - lag).
#include <algorithm>

#include "algorithms/registry.hpp"
#include "algorithms/tree_engine.hpp"

namespace tern {

namespace {
constexpr size_t kLag = 2;
}  // namespace

Schedule buildDoubleTreeAllReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("dbtree", args, rank, nranks);
  const std::vector<int> order = algo::ringOrder(options, nranks);
  const int pos = algo::positionOf(order, rank);
  const size_t chunk = algo::chunkElems(options, program.esize());
  algo::TreeAllReduce t0(program, order, algo::btreeLinks(nranks, pos), algo::evenPart(args.count, 2, 0), chunk);
  algo::TreeAllReduce t1(program, order, algo::btreeComplementLinks(nranks, pos), algo::evenPart(args.count, 2, 1),
                         chunk);
  algo::TreeAllReduce* trees[] = {&t0, &t1};
  const size_t chunks = std::max(t0.numChunks(), t1.numChunks());
  for (size_t t = 0; t < chunks + kLag; ++t) {
    for (algo::TreeAllReduce* tree : trees) {
      if (t < tree->numChunks()) tree->emitUp(t);
    }
    for (algo::TreeAllReduce* tree : trees) {
      if (t >= kLag && t - kLag < tree->numChunks()) tree->emitDown(t - kLag);
    }
  }
  return program.take();
}

}  // namespace tern
