// Scatter + allgather broadcast (van de Geijn): the root scatters the buffer in n blocks down a binomial tree, then
// a ring all-gather completes every copy. 2 lg(n) alpha + 2 (n-1)/n n beta: for large messages on many ranks the
// root sends the data about once instead of lg(n) times (binomial) and no rank forwards more than twice its share.
//
// Positions are taken in ring order relative to the root (v = 0 is the root) and block b belongs to position b.
// After the scatter, position v holds the blocks of its binomial subtree, [v, v + size(v)). The ring all-gather
// then skips every transfer whose receiver already has the block (the sender can tell: subtrees are known to all),
// and the root, which has everything, receives nothing. Blocks are chunked, so forwarding in the ring pipelines.
#include <algorithm>

#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

Schedule buildScatterAllGatherBroadcast(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("scatter_allgather", args, rank, nranks);
  const std::vector<int> order = algo::ringOrder(options, nranks);
  const int rootPos = algo::positionOf(order, args.root);
  const int v = algo::mod(algo::positionOf(order, rank) - rootPos, nranks);
  auto rankAt = [&](int pos) { return order[algo::mod(pos + rootPos, nranks)]; };
  const size_t chunk = algo::chunkElems(options, program.esize());
  const size_t n = static_cast<size_t>(nranks);
  auto blocks = [&](int first, int last) { return algo::evenParts(args.count, n, first, last); };
  // Subtree of position u in the binomial scatter: [u, u + size).
  auto subtree = [nranks](int u) { return u == 0 ? nranks : std::min(u & -u, nranks - u); };
  auto has = [&](int u, int b) { return u == 0 || (b >= u && b < u + subtree(u)); };
  // The root's data: its input (it never waits for its own copy).
  auto src = [&](const algo::ElemRange& pc) { return v == 0 ? program.inputAt(pc) : program.outputAt(pc); };

  if (v == 0) {
    for (const algo::ElemRange& pc : algo::pieces({{0, args.count}}, chunk)) {
      program.copy(program.outputAt(pc), program.inputAt(pc));
    }
  }
  // Binomial scatter: receive the own subtree's blocks, pass the children's subtrees on (largest first).
  int top = 1;
  while (top < nranks) top *= 2;
  if (v != 0) {
    for (const algo::ElemRange& pc : algo::pieces({blocks(v, v + subtree(v))}, chunk)) {
      program.recv(rankAt(v - (v & -v)), program.outputAt(pc));
    }
  }
  for (int mask = (v == 0 ? top : (v & -v)) / 2; mask >= 1; mask /= 2) {
    const int child = v + mask;
    if (child >= nranks) continue;
    for (const algo::ElemRange& pc : algo::pieces({blocks(child, child + subtree(child))}, chunk)) {
      program.send(rankAt(child), src(pc));
    }
  }
  // Ring all-gather over positions, skipping blocks the receiver already has.
  if (nranks > 1) {
    const int next = algo::mod(v + 1, nranks), prev = algo::mod(v - 1, nranks);
    for (int s = 0; s < nranks - 1; ++s) {
      const int sb = algo::mod(v - s, nranks), rb = algo::mod(v - s - 1, nranks);
      const auto sp = has(next, sb) ? std::vector<algo::ElemRange>{} : algo::pieces({blocks(sb, sb + 1)}, chunk);
      const auto rp = has(v, rb) ? std::vector<algo::ElemRange>{} : algo::pieces({blocks(rb, rb + 1)}, chunk);
      for (size_t c = 0; c < std::max(sp.size(), rp.size()); ++c) {
        if (c < sp.size()) program.send(rankAt(next), src(sp[c]));
        if (c < rp.size()) program.recv(rankAt(prev), program.outputAt(rp[c]));
      }
    }
  }
  return program.take();
}

}  // namespace tern
