// Pairwise-exchange alltoallv: the same matching rounds as the pairwise alltoall (partner (s - rank) mod n in round
// s), with per-peer counts and displacements. Every pair exchanges a message in both directions even when a count
// is zero: a zero-byte message is cheap, and it keeps both sides in step when the user's counts disagree, so a
// mismatch surfaces as a size error instead of a hang.
//
// In place, the send and receive regions can overlap arbitrarily (displacements are free), so the whole send extent
// is staged into scratch first with one copy, and the exchange then runs out of place from the staged copy.
#include <algorithm>

#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"
#include "base/error.hpp"

namespace tern {

Schedule buildPairwiseAlltoAllv(const CollArgs& args, int rank, int nranks, const BuildOptions&) {
  algo::Program program("pairwise", args, rank, nranks);
  const size_t n = static_cast<size_t>(nranks);
  if (args.sendCounts.size() != n || args.sendDispls.size() != n || args.recvCounts.size() != n ||
      args.recvDispls.size() != n) {
    throwError(ternInvalidArgument, "alltoallv: counts and displacements need %d entries each", nranks);
  }
  if (args.sendCounts[rank] != args.recvCounts[rank]) {
    throwError(ternInvalidArgument, "alltoallv: rank %d sends %zu elements to itself but expects %zu", rank,
               args.sendCounts[rank], args.recvCounts[rank]);
  }
  algo::Locator src = program.inputLocator();
  if (args.inPlace) {
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t r = 0; r < n; ++r) {
      if (args.sendCounts[r] == 0) continue;
      lo = std::min(lo, args.sendDispls[r]);
      hi = std::max(hi, args.sendDispls[r] + args.sendCounts[r]);
    }
    if (lo < hi) {
      const size_t stage = program.allocScratch((hi - lo) * program.esize());
      program.copy(program.scratchAt(stage, hi - lo), program.inputAt(lo, hi - lo));
      src = program.scratchLocator(stage, lo);
    }
  }
  program.copy(program.outputAt(args.recvDispls[rank], args.recvCounts[rank]),
               src(args.sendDispls[rank], args.sendCounts[rank]));
  for (int s = 0; s < nranks; ++s) {
    const int partner = algo::mod(s - rank, nranks);
    if (partner == rank) continue;
    program.send(partner, src(args.sendDispls[partner], args.sendCounts[partner]));
    program.recv(partner, program.outputAt(args.recvDispls[partner], args.recvCounts[partner]));
  }
  return program.take();
}

}  // namespace tern
