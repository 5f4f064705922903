// Pairwise-exchange alltoall: n-1 rounds; in round s every rank exchanges one block with partner (s - rank) mod n.
// That map is an involution, so each round is a perfect matching (plus, per rank, one round where the partner is
// itself: the local copy) and over the n rounds every pair meets exactly once. Ranks talk to one peer at a time in
// the same order everywhere, which avoids the incast of "everyone sends to rank 0 first".
//
// Out of place, all exchanges are independent: sends read the input, receives write the output, and the executor
// may run them all at once. In place (input == output), block j holds both the data for rank j and, afterwards,
// the data from rank j; receiving directly would overwrite the outgoing block before it is sent, and waiting for
// the send first deadlocks under a rendezvous transport (both partners wait for each other's receive). So the
// incoming block is staged through a bounded pool of chunk-sized scratch slots and copied into place once the
// outgoing chunk has been sent: scratch stays a few chunks, not a whole buffer.
#include <algorithm>

#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

namespace {
constexpr size_t kSlots = 8;
}  // namespace

Schedule buildPairwiseAlltoAll(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("pairwise", args, rank, nranks);
  const size_t count = args.count;
  if (count == 0) return program.take();
  auto block = [count](int r) { return algo::ElemRange{static_cast<size_t>(r) * count, count}; };
  program.copy(program.outputAt(block(rank)), program.inputAt(block(rank)));
  if (!args.inPlace) {
    for (int s = 0; s < nranks; ++s) {
      const int partner = algo::mod(s - rank, nranks);
      if (partner == rank) continue;
      program.send(partner, program.inputAt(block(partner)));
      program.recv(partner, program.outputAt(block(partner)));
    }
    return program.take();
  }
  const size_t chunk = algo::chunkElems(options, program.esize());
  algo::SlotPool pool(program, std::min(chunk, count) * program.esize(), kSlots);
  for (int s = 0; s < nranks; ++s) {
    const int partner = algo::mod(s - rank, nranks);
    if (partner == rank) continue;
    for (const algo::ElemRange& pc : algo::pieces({block(partner)}, chunk)) {
      const size_t slot = pool.acquire();
      const Span staged = program.scratchAt(slot, pc.count);
      program.recv(partner, staged);
      program.send(partner, program.outputAt(pc));
      program.copy(program.outputAt(pc), staged);  // after the send above (derived dependency)
      pool.release(slot);
    }
  }
  return program.take();
}

}  // namespace tern
