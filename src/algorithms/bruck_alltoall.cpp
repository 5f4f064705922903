// Bruck alltoall: ceil(log2 n) steps for any n. Index blocks relative to the rank: block i (i = 0..n-1) is the one
// destined to rank + i. In step k every rank sends, packed into one message, all blocks whose index has bit k set,
// to rank + 2^k, and receives the same indices from rank - 2^k. A block with index i thus travels i hops in
// binary, and after the last step block i at rank r came from rank r - i. lg(n) alpha + (n/2) lg(n) n beta: fewer
// messages than pairwise exchange, more bytes, the choice for small blocks and many ranks.
//
// The classic version rotates into a temporary first and back at the end. Here a block's location is tracked
// instead: it starts in the input, moves to a scratch area while it still has hops to make, and the step that
// delivers it for the last time unpacks it straight into its final place in the output. Packing into and out of
// the message buffers is a copy per block and step (that is the algorithm's cost). In place, the input is first
// staged into scratch, since outputs are written before all inputs have been sent.
#include <algorithm>

#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

Schedule buildBruckAlltoAll(const CollArgs& args, int rank, int nranks, const BuildOptions&) {
  algo::Program program("bruck", args, rank, nranks);
  const size_t count = args.count;
  if (count == 0) return program.take();
  const size_t esize = program.esize();
  const size_t blockBytes = count * esize;
  auto userBlock = [&](int r) { return static_cast<size_t>(algo::mod(r, nranks)) * count; };

  // Current location of block i (destined to rank + i).
  std::vector<Span> loc(nranks);
  if (args.inPlace) {
    const size_t stage = program.allocScratch(blockBytes * nranks);
    program.copy(program.scratchAt(stage, count * nranks), program.inputAt(0, count * nranks));
    for (int i = 0; i < nranks; ++i) loc[i] = program.scratchAt(stage + userBlock(rank + i) * esize, count);
  } else {
    for (int i = 0; i < nranks; ++i) loc[i] = program.inputAt(userBlock(rank + i), count);
  }
  program.copy(program.outputAt(userBlock(rank), count), loc[0]);

  int maxSet = 0;
  for (int d = 1; d < nranks; d *= 2) {
    int num = 0;
    for (int i = 1; i < nranks; ++i) num += (i & d) ? 1 : 0;
    maxSet = std::max(maxSet, num);
  }
  const size_t sendPack = program.allocScratch(blockBytes * maxSet);
  const size_t recvPack = program.allocScratch(blockBytes * maxSet);
  const size_t transit = program.allocScratch(blockBytes * nranks);  // blocks between hops, by index

  for (int d = 1; d < nranks; d *= 2) {
    std::vector<int> idx;
    for (int i = 1; i < nranks; ++i) {
      if (i & d) idx.push_back(i);
    }
    const size_t num = idx.size();
    for (size_t j = 0; j < num; ++j) program.copy(program.scratchAt(sendPack + j * blockBytes, count), loc[idx[j]]);
    program.send(algo::mod(rank + d, nranks), program.scratchAt(sendPack, count * num));
    program.recv(algo::mod(rank - d, nranks), program.scratchAt(recvPack, count * num));
    for (size_t j = 0; j < num; ++j) {
      const int i = idx[j];
      // Block i arrived from rank - d; its remaining hops are its bits above d.
      const bool done = i < 2 * d;
      const Span dst = done ? program.outputAt(userBlock(rank - i), count)
                            : program.scratchAt(transit + static_cast<size_t>(i) * blockBytes, count);
      program.copy(dst, program.scratchAt(recvPack + j * blockBytes, count));
      loc[i] = dst;
    }
  }
  return program.take();
}

}  // namespace tern
