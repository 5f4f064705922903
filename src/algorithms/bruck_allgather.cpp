// Bruck allgather: ceil(log2 n) steps for any n (no fold). In step k (distance d = 2^k) every rank sends the
// min(d, n - d) blocks it has, starting with its own, to rank - d, and receives as many from rank + d; after the
// last step it has all n. The classic formulation gathers into a rotated temporary and rotates at the end; here
// every block goes straight to its final place in the output instead: the blocks a rank holds after step k are
// those of ranks rank, rank+1, ..., rank+2^(k+1)-1 (mod n), which are at most two contiguous ranges of the output,
// so each step is at most two messages each way (split identically by sender and receiver at the wrap from block
// n-1 to block 0) and no scratch and no final copy are needed.
#include <algorithm>

#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

Schedule buildBruckAllGather(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("bruck", args, rank, nranks);
  const size_t count = args.count;
  const size_t chunk = algo::chunkElems(options, program.esize());
  const algo::ElemRange own{static_cast<size_t>(rank) * count, count};
  const algo::Locator in = program.inputLocator(own.offset);
  for (const algo::ElemRange& pc : algo::pieces({own}, chunk)) {
    program.copy(program.outputAt(pc), in(pc.offset, pc.count));
  }
  // Blocks first, first+1, ..., first+num-1 (mod n), as ranges of the output split at the wrap.
  auto blocks = [&](int first, int num) {
    algo::Block b;
    const int a = algo::mod(first, nranks);
    const int head = std::min(num, nranks - a);
    b.push_back({static_cast<size_t>(a) * count, static_cast<size_t>(head) * count});
    if (num > head) b.push_back({0, static_cast<size_t>(num - head) * count});
    return b;
  };
  for (int d = 1; d < nranks; d *= 2) {
    const int num = std::min(d, nranks - d);
    for (const algo::ElemRange& pc : algo::pieces(blocks(rank, num), chunk)) {
      const bool fromInput = d == 1;  // the first step sends only the own block: straight from the input
      program.send(algo::mod(rank - d, nranks), fromInput ? in(pc.offset, pc.count) : program.outputAt(pc));
    }
    for (const algo::ElemRange& pc : algo::pieces(blocks(rank + d, num), chunk)) {
      program.recv(algo::mod(rank + d, nranks), program.outputAt(pc));
    }
  }
  return program.take();
}

}  // namespace tern
