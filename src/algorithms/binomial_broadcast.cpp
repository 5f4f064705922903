// Binomial tree broadcast: relative to the root, rank v receives from v minus its lowest set bit and sends to
// v + 2^k for every 2^k below that bit (largest subtree first). ceil(log2 n) hops, each carrying the whole
// buffer: lg(n) (alpha + n beta), the choice for small messages.
//
// Chunked like the chain: a rank forwards each chunk as soon as it arrived, so for larger messages the tree levels
// overlap instead of waiting for the whole buffer per level. Chunks land in the output and are forwarded from
// there; the root sends from its input. Non-root inputs are never touched.
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

Schedule buildBinomialBroadcast(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("binomial", args, rank, nranks);
  const int v = algo::mod(rank - args.root, nranks);
  const int low = v == 0 ? 0 : (v & -v);
  int top = 1;  // children are v + mask for mask < low (all masks < n at the root)
  while (top < nranks) top *= 2;
  std::vector<int> children;
  for (int mask = (v == 0 ? top : low) / 2; mask >= 1; mask /= 2) {
    if (v + mask < nranks) children.push_back(algo::mod(v + mask + args.root, nranks));
  }
  const int parent = v == 0 ? -1 : algo::mod(v - low + args.root, nranks);
  for (const algo::ElemRange& pc : algo::pieces({{0, args.count}}, algo::chunkElems(options, program.esize()))) {
    const Span out = program.outputAt(pc);
    if (parent < 0) {
      for (int c : children) program.send(c, program.inputAt(pc));
      program.copy(out, program.inputAt(pc));
    } else {
      program.recv(parent, out);
      for (int c : children) program.send(c, out);
    }
  }
  return program.take();
}

}  // namespace tern
