// Rabenseifner allreduce: a reduce-scatter by recursive halving followed by an all-gather by recursive doubling.
// 2 lg(n) alpha + 2 (n-1)/n n beta + (n-1)/n n gamma: the ring's bandwidth with logarithmic latency, the usual
// choice for medium and large messages on power-of-two rank counts.
//
// Halving: with participants numbered 0..p-1 (p a power of two) and the buffer cut in p blocks, the step with
// distance m (p/2, p/4, ..., 1) splits the current window of blocks in two; the rank keeps the half on its side of
// rank ^ m, sends the other half to rank ^ m and reduces the half it keeps with what comes back. After lg(p) steps
// participant i holds block i fully reduced (and divides it, for avg). Doubling runs the steps backwards, swapping
// whole windows, until everyone has everything.
//
// Non-powers of two: the fold of chunking.hpp (even ranks of the first 2*rem hand their input to their odd
// neighbour and get the result back at the end).
//
// Determinism: each block's final value is computed once, by its owner, then only copied. Partners order operands
// the same way (the lower newrank's data first), so even intermediate partials do not depend on who computes them.
// Transfers are chunked, so reductions overlap the transfers of following chunks; receives use bounded slots.
#include <algorithm>

#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

namespace {
constexpr size_t kSlots = 4;
}  // namespace

Schedule buildRabenseifnerAllReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("rhd", args, rank, nranks);
  const size_t chunk = algo::chunkElems(options, program.esize());
  const auto all = algo::pieces({{0, args.count}}, chunk);
  if (nranks == 1) {
    for (const algo::ElemRange& pc : all) program.copy(program.outputAt(pc), program.inputAt(pc));
    return program.take();
  }
  const algo::Fold fold = algo::makeFold(nranks);
  const int nr = fold.newrank(rank);
  // Windows are cut into chunks separately, so a slot must hold a full chunk (not just the largest piece of "all").
  algo::SlotPool pool(program, std::min(chunk, args.count) * program.esize(), kSlots);
  if (nr < 0) {
    for (const algo::ElemRange& pc : all) program.send(rank + 1, program.inputAt(pc));
    for (const algo::ElemRange& pc : all) program.recv(rank + 1, program.outputAt(pc));
    return program.take();
  }
  const bool foldedIn = rank < 2 * fold.rem;
  if (foldedIn) {
    for (const algo::ElemRange& pc : all) {
      const size_t slot = pool.acquire();
      const Span in = program.scratchAt(slot, pc.count);
      program.recv(rank - 1, in);
      program.reduce(program.outputAt(pc), in, program.inputAt(pc));
      pool.release(slot);
    }
  }
  const size_t p = static_cast<size_t>(fold.pof2);
  auto window = [&](size_t lo, size_t hi) { return algo::evenParts(args.count, p, lo, hi); };

  // Reduce-scatter by recursive halving.
  size_t lo = 0, hi = p;
  bool first = true;
  for (size_t m = p / 2; m >= 1; m /= 2) {
    const size_t pnr = static_cast<size_t>(nr) ^ m;
    const int peer = fold.rankOf(static_cast<int>(pnr));
    const size_t mid = lo + m;
    const bool lower = (static_cast<size_t>(nr) & m) == 0;
    const algo::ElemRange keep = lower ? window(lo, mid) : window(mid, hi);
    const algo::ElemRange give = lower ? window(mid, hi) : window(lo, mid);
    // Before the first reduction the partial is the input (unless the fold already reduced into the output).
    auto cur = [&](const algo::ElemRange& pc) {
      return first && !foldedIn ? program.inputAt(pc) : program.outputAt(pc);
    };
    for (const algo::ElemRange& pc : algo::pieces({give}, chunk)) program.send(peer, cur(pc));
    for (const algo::ElemRange& pc : algo::pieces({keep}, chunk)) {
      const size_t slot = pool.acquire();
      const Span in = program.scratchAt(slot, pc.count);
      program.recv(peer, in);
      program.reduce(program.outputAt(pc), nr < static_cast<int>(pnr) ? cur(pc) : in,
                     nr < static_cast<int>(pnr) ? in : cur(pc));
      pool.release(slot);
    }
    if (lower) {
      hi = mid;
    } else {
      lo = mid;
    }
    first = false;
  }
  for (const algo::ElemRange& pc : algo::pieces({window(nr, nr + 1)}, chunk)) {
    program.finalizeAvg(program.outputAt(pc));
  }

  // All-gather by recursive doubling: swap the windows of the two halves of ever larger groups.
  for (size_t m = 1; m < p; m *= 2) {
    const size_t pnr = static_cast<size_t>(nr) ^ m;
    const int peer = fold.rankOf(static_cast<int>(pnr));
    const size_t mine = static_cast<size_t>(nr) & ~(m - 1);
    const size_t theirs = pnr & ~(m - 1);
    for (const algo::ElemRange& pc : algo::pieces({window(mine, mine + m)}, chunk)) {
      program.send(peer, program.outputAt(pc));
    }
    for (const algo::ElemRange& pc : algo::pieces({window(theirs, theirs + m)}, chunk)) {
      program.recv(peer, program.outputAt(pc));
    }
  }
  if (foldedIn) {
    for (const algo::ElemRange& pc : all) program.send(rank - 1, program.outputAt(pc));
  }
  return program.take();
}

}  // namespace tern
