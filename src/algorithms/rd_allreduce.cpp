// Recursive doubling allreduce: log2(n) steps; in the step with distance m every rank exchanges its whole current
// partial with rank ^ m and combines the two. lg(n) (alpha + n beta + n gamma): the fewest hops of all, but every
// step moves the whole buffer, so it is the choice for small messages only.
//
// Non-powers of two use the standard fold: the first 2*rem ranks pair up, the even one of each pair hands its
// input to the odd one beforehand and gets the result back afterwards (chunking.hpp, Fold).
//
// Determinism: both partners of a step compute op(lower half's partial, upper half's partial) with the operands in
// the same order (the lower newrank's data first), so they get the same bits; by induction every participant ends
// with identical results, and the average's division is applied to identical data. That matters for max/min with
// +-0 or NaN payloads too, where op(a, b) and op(b, a) may differ in bits.
//
// Chunked: each step's exchange is split in chunks, so the reduction of one chunk overlaps the transfer of the
// next, and receives go to a bounded pool of scratch slots instead of a full second buffer.
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

namespace {
constexpr size_t kSlots = 4;
}  // namespace

Schedule buildRecursiveDoublingAllReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("rd", args, rank, nranks);
  const auto pcs = algo::pieces({{0, args.count}}, algo::chunkElems(options, program.esize()));
  if (nranks == 1) {
    for (const algo::ElemRange& pc : pcs) program.copy(program.outputAt(pc), program.inputAt(pc));
    return program.take();
  }
  const algo::Fold fold = algo::makeFold(nranks);
  const int nr = fold.newrank(rank);
  algo::SlotPool pool(program, algo::maxCount(pcs) * program.esize(), kSlots);
  if (nr < 0) {
    // Folded away: contribute, then receive the result.
    for (const algo::ElemRange& pc : pcs) program.send(rank + 1, program.inputAt(pc));
    for (const algo::ElemRange& pc : pcs) program.recv(rank + 1, program.outputAt(pc));
    return program.take();
  }
  const bool foldedIn = rank < 2 * fold.rem;
  bool inOutput = false;  // where this rank's partial lives: input until the first reduction wrote the output
  if (foldedIn) {
    for (const algo::ElemRange& pc : pcs) {
      const size_t slot = pool.acquire();
      const Span in = program.scratchAt(slot, pc.count);
      program.recv(rank - 1, in);
      program.reduce(program.outputAt(pc), in, program.inputAt(pc));  // lower rank's data first
      pool.release(slot);
    }
    inOutput = true;
  }
  for (int m = 1; m < fold.pof2; m *= 2) {
    const int pnr = nr ^ m;
    const int peer = fold.rankOf(pnr);
    const bool mineFirst = nr < pnr;
    for (const algo::ElemRange& pc : pcs) {
      const Span cur = inOutput ? program.outputAt(pc) : program.inputAt(pc);
      program.send(peer, cur);
      const size_t slot = pool.acquire();
      const Span in = program.scratchAt(slot, pc.count);
      program.recv(peer, in);
      program.reduce(program.outputAt(pc), mineFirst ? cur : in, mineFirst ? in : cur);
      pool.release(slot);
    }
    inOutput = true;
  }
  for (const algo::ElemRange& pc : pcs) {
    program.finalizeAvg(program.outputAt(pc));
    if (foldedIn) program.send(rank - 1, program.outputAt(pc));
  }
  return program.take();
}

}  // namespace tern
