// Recursive halving reduce-scatter: lg(n) steps; in the step with distance m (p/2, ..., 1) a rank keeps the half
// of its current window of blocks on its side of rank ^ m, sends the other half there and reduces what comes back
// into the half it keeps. lg(n) alpha + (n-1)/n n beta + (n-1)/n n gamma: ring bandwidth with logarithmic latency.
//
// Non-powers of two use the fold of chunking.hpp: even rank 2i (i < rem) hands its whole input to 2i+1, which
// takes part for both (its window covers both ranks' blocks) and at the end sends 2i its finished block. Windows
// are lists of per-rank blocks, so no chunk straddles two destinations.
//
// Partials are kept in scratch covering the first kept half (the whole input for a folded-in rank); the last step
// reduces straight into the output. Each block is finished once, by its owner (or its fold partner), and divided
// there (avg). Operands are ordered by newrank (lower first), as in the other recursive algorithms.
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

namespace {
constexpr size_t kSlots = 4;
}  // namespace

Schedule buildRecursiveHalvingReduceScatter(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("rh", args, rank, nranks);
  const size_t count = args.count;
  const size_t chunk = algo::chunkElems(options, program.esize());
  const algo::ElemRange own{static_cast<size_t>(rank) * count, count};
  const algo::Locator out = program.outputLocator(own.offset);
  const algo::Locator in = program.inputLocator();
  if (nranks == 1 || count == 0) {
    for (const algo::ElemRange& pc : algo::pieces({own}, chunk))
      program.copy(out(pc.offset, pc.count), in(pc.offset, pc.count));
    return program.take();
  }
  const algo::Fold fold = algo::makeFold(nranks);
  const int nr = fold.newrank(rank);
  // The blocks of ranks [first, last), one range per rank.
  auto blocksOf = [count](int first, int last) {
    algo::Block b;
    for (int r = first; r < last; ++r) b.push_back({static_cast<size_t>(r) * count, count});
    return b;
  };
  auto newrankBlocks = [&](int lo, int hi) { return blocksOf(fold.firstRank(lo), fold.firstRank(hi)); };
  const auto allPieces = algo::pieces(blocksOf(0, nranks), chunk);
  algo::SlotPool pool(program, algo::maxCount(allPieces) * program.esize(), kSlots);

  if (nr < 0) {
    for (const algo::ElemRange& pc : allPieces) program.send(rank + 1, in(pc.offset, pc.count));
    for (const algo::ElemRange& pc : algo::pieces({own}, chunk)) program.recv(rank + 1, out(pc.offset, pc.count));
    return program.take();
  }
  const bool foldedIn = rank < 2 * fold.rem;
  const int p = fold.pof2;
  // Scratch for partials: elements [accBase, accBase + accCount) of the input layout.
  size_t accBase = 0, accCount = 0;
  if (foldedIn) {
    accCount = count * static_cast<size_t>(nranks);
  } else if (p > 2) {
    const int lo = (nr & (p / 2)) == 0 ? 0 : p / 2;
    accBase = static_cast<size_t>(fold.firstRank(lo)) * count;
    accCount = static_cast<size_t>(fold.firstRank(lo + p / 2)) * count - accBase;
  }
  const algo::Locator acc = program.scratchLocator(program.allocScratch(accCount * program.esize()), accBase);

  if (foldedIn) {
    for (const algo::ElemRange& pc : allPieces) {
      const size_t slot = pool.acquire();
      const Span got = program.scratchAt(slot, pc.count);
      program.recv(rank - 1, got);
      program.reduce(acc(pc.offset, pc.count), got, in(pc.offset, pc.count));
      pool.release(slot);
    }
  }
  int lo = 0, hi = p;
  bool first = true;
  for (int m = p / 2; m >= 1; m /= 2) {
    const int pnr = nr ^ m;
    const int peer = fold.rankOf(pnr);
    const int mid = lo + m;
    const bool lower = (nr & m) == 0;
    const algo::Block keep = lower ? newrankBlocks(lo, mid) : newrankBlocks(mid, hi);
    const algo::Block give = lower ? newrankBlocks(mid, hi) : newrankBlocks(lo, mid);
    auto cur = [&](const algo::ElemRange& pc) {
      return first && !foldedIn ? in(pc.offset, pc.count) : acc(pc.offset, pc.count);
    };
    for (const algo::ElemRange& pc : algo::pieces(give, chunk)) program.send(peer, cur(pc));
    for (const algo::ElemRange& pc : algo::pieces(keep, chunk)) {
      const size_t slot = pool.acquire();
      const Span got = program.scratchAt(slot, pc.count);
      program.recv(peer, got);
      // The last step writes the own block straight into the output.
      const bool final = m == 1 && pc.offset >= own.offset && pc.offset < own.end();
      const Span dst = final ? out(pc.offset, pc.count) : acc(pc.offset, pc.count);
      program.reduce(dst, nr < pnr ? cur(pc) : got, nr < pnr ? got : cur(pc));
      pool.release(slot);
    }
    if (lower) {
      hi = mid;
    } else {
      lo = mid;
    }
    first = false;
  }
  for (const algo::ElemRange& pc : algo::pieces({own}, chunk)) program.finalizeAvg(out(pc.offset, pc.count));
  if (foldedIn) {
    for (const algo::ElemRange& pc : algo::pieces(blocksOf(rank - 1, rank), chunk)) {
      program.finalizeAvg(acc(pc.offset, pc.count));
      program.send(rank - 1, acc(pc.offset, pc.count));
    }
  }
  return program.take();
}

}  // namespace tern
