// Tree allreduce: pipelined reduce up a binary tree and broadcast back down (tree_engine.hpp). Latency grows with
// the tree depth, about 2 log2(n) hops, instead of the ring's 2(n-1), while chunking keeps the links streaming for
// large messages. Each inner node sends and receives the whole buffer about three times (two children and one
// parent in each direction) versus twice for leaves, so its bandwidth is below the ring's; "dbtree" evens that
// out. Ranks are placed on the tree in ring order (BuildOptions::ringOrder), so that tree neighbours are close.
#include "algorithms/registry.hpp"
#include "algorithms/tree_engine.hpp"

namespace tern {

namespace {
// The down phase of chunk c is emitted next to the up phase of chunk c + kLag: broadcasting finished chunks while
// later ones still climb.
constexpr size_t kLag = 2;
}  // namespace

Schedule buildTreeAllReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("tree", args, rank, nranks);
  const std::vector<int> order = algo::ringOrder(options, nranks);
  const int pos = algo::positionOf(order, rank);
  algo::TreeAllReduce tree(program, order, algo::btreeLinks(nranks, pos), {0, args.count},
                           algo::chunkElems(options, program.esize()));
  const size_t chunks = tree.numChunks();
  for (size_t t = 0; t < chunks + kLag; ++t) {
    if (t < chunks) tree.emitUp(t);
    if (t >= kLag) tree.emitDown(t - kLag);
  }
  return program.take();
}

}  // namespace tern
