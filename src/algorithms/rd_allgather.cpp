// Recursive doubling allgather: lg(n) steps; in the step with distance m every rank swaps everything it has
// gathered so far (the blocks of its group of m) with rank ^ m. lg(n) alpha + (n-1)/n n beta: the latency of a
// tree with the bandwidth of a ring, for small and medium messages.
//
// Non-powers of two use the fold of chunking.hpp: even rank 2i (i < rem) first hands its block to 2i+1, which
// takes part for both, and at the end receives the other blocks back. Because a group of consecutive newranks
// stands for a contiguous range of ranks, every step moves one contiguous range of the output. Received blocks land
// in place in the output; transfers are chunked (bounded message sizes, overlap of consecutive chunks).
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

Schedule buildRecursiveDoublingAllGather(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("rd", args, rank, nranks);
  const size_t count = args.count;
  const size_t chunk = algo::chunkElems(options, program.esize());
  const algo::ElemRange own{static_cast<size_t>(rank) * count, count};
  const algo::Locator in = program.inputLocator(own.offset);
  auto ranks = [count](int first, int last) {  // output range of the blocks of ranks [first, last)
    return algo::ElemRange{static_cast<size_t>(first) * count, static_cast<size_t>(last - first) * count};
  };
  for (const algo::ElemRange& pc : algo::pieces({own}, chunk)) {
    program.copy(program.outputAt(pc), in(pc.offset, pc.count));
  }
  if (nranks == 1) return program.take();
  const algo::Fold fold = algo::makeFold(nranks);
  const int nr = fold.newrank(rank);
  if (nr < 0) {
    for (const algo::ElemRange& pc : algo::pieces({own}, chunk)) program.send(rank + 1, in(pc.offset, pc.count));
    for (const algo::ElemRange& pc : algo::pieces({ranks(0, rank), ranks(rank + 1, nranks)}, chunk)) {
      program.recv(rank + 1, program.outputAt(pc));
    }
    return program.take();
  }
  const bool foldedIn = rank < 2 * fold.rem;
  if (foldedIn) {
    for (const algo::ElemRange& pc : algo::pieces({ranks(rank - 1, rank)}, chunk)) {
      program.recv(rank - 1, program.outputAt(pc));
    }
  }
  for (int m = 1; m < fold.pof2; m *= 2) {
    const int pnr = nr ^ m;
    const int peer = fold.rankOf(pnr);
    const int mine = nr & ~(m - 1);
    const int theirs = pnr & ~(m - 1);
    const algo::ElemRange give = ranks(fold.firstRank(mine), fold.firstRank(mine + m));
    const algo::ElemRange take = ranks(fold.firstRank(theirs), fold.firstRank(theirs + m));
    for (const algo::ElemRange& pc : algo::pieces({give}, chunk)) {
      // The very first step sends the own block straight from the input, not waiting for the copy above.
      const bool fromInput = m == 1 && !foldedIn;
      program.send(peer, fromInput ? in(pc.offset, pc.count) : program.outputAt(pc));
    }
    for (const algo::ElemRange& pc : algo::pieces({take}, chunk)) program.recv(peer, program.outputAt(pc));
  }
  if (foldedIn) {
    for (const algo::ElemRange& pc : algo::pieces({ranks(0, rank - 1), ranks(rank, nranks)}, chunk)) {
      program.send(rank - 1, program.outputAt(pc));
    }
  }
  return program.take();
}

}  // namespace tern
