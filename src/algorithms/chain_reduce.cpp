// Chain reduce: the mirror image of the chain broadcast. The rank farthest from the root (in ring order) sends its
// input chunk by chunk; every rank on the way adds its own contribution and passes the partial on; the root adds
// its own last and writes the output. Pipelined like the broadcast: (n-1) + (C-1) chunk times for C chunks.
//
// Intermediate ranks have no output (it may be null), so partials live in scratch slots: a chunk arrives in a slot,
// is reduced in place with the rank's input and sent on from the same slot; the slot is reused when that send has
// completed. The chain ends at the root, whose slots are freed by local reductions, so waiting on downstream sends
// can never close a cycle: deadlock-free with any number of chunks in flight and a small, bounded slot pool.
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

namespace {
constexpr size_t kSlots = 4;  // chunks in flight per rank
}  // namespace

Schedule buildChainReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("chain", args, rank, nranks);
  const std::vector<int> order = algo::ringOrder(options, nranks);
  const int rootPos = algo::positionOf(order, args.root);
  const int q = algo::mod(algo::positionOf(order, rank) - rootPos, nranks);  // distance from the root
  // Data flows from q = n-1 down to q = 0 (the root).
  const int toward = q > 0 ? order[algo::mod(rootPos + q - 1, nranks)] : -1;
  const bool hasUpstream = q + 1 < nranks;
  const int upstream = hasUpstream ? order[algo::mod(rootPos + q + 1, nranks)] : -1;
  const auto pcs = algo::pieces({{0, args.count}}, algo::chunkElems(options, program.esize()));
  algo::SlotPool pool(program, algo::maxCount(pcs) * program.esize(), kSlots);
  for (const algo::ElemRange& pc : pcs) {
    if (!hasUpstream) {
      // The chain's start (or a single rank): its input is the partial.
      if (q == 0) {
        program.copy(program.outputAt(pc), program.inputAt(pc));
      } else {
        program.send(toward, program.inputAt(pc));
      }
      continue;
    }
    const size_t slot = pool.acquire();
    const Span in = program.scratchAt(slot, pc.count);
    program.recv(upstream, in);
    if (q == 0) {
      program.reduce(program.outputAt(pc), in, program.inputAt(pc));
      program.finalizeAvg(program.outputAt(pc));
    } else {
      program.reduce(in, in, program.inputAt(pc));
      program.send(toward, in);
    }
    pool.release(slot);
  }
  return program.take();
}

}  // namespace tern
