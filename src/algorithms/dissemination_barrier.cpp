// Dissemination barrier (Hensgen, Finkel, Manber): ceil(log2 n) rounds; in round k every rank signals rank + 2^k
// and waits for a signal from rank - 2^k. A round's signal is sent only after all earlier rounds' signals arrived,
// so after round k a rank has (transitively) heard from the 2^(k+1) - 1 ranks before it, and after the last round
// from everyone. Works for any n, and every rank does the same amount of work (no root to become a hot spot).
// Signals are zero-byte messages.
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

Schedule buildDisseminationBarrier(const CollArgs& args, int rank, int nranks, const BuildOptions&) {
  algo::Program program("dissemination", args, rank, nranks);
  // A round's signal must follow every earlier arrival, not just the last one: receives have no dependencies of
  // their own, so "after the previous receive" would not imply "after the ones before it".
  std::vector<uint32_t> heard;
  for (int dist = 1; dist < nranks; dist *= 2) {
    program.send(algo::mod(rank + dist, nranks), Span{}, heard);
    heard.push_back(program.recv(algo::mod(rank - dist, nranks), Span{}));
  }
  return program.take();
}

}  // namespace tern
