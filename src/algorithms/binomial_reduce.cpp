// Binomial tree reduce: relative to the root, rank v receives the partials of its children v + 2^k (for 2^k below
// its lowest set bit, smallest first), combines them with its own input and sends the result to its parent v minus
// its lowest set bit. ceil(log2 n) hops: lg(n) (alpha + n beta + n gamma), the choice for small messages.
//
// Chunked and pipelined like the chain reduce: each chunk climbs independently. Partials of inner non-root ranks
// live in scratch accumulator slots (their output may be null); a slot is reused once its send completed, and since
// the tree ends at the root, whose accumulator is its output, that wait can never close a cycle. Operand order is
// fixed (own input first, then children by increasing distance), so results do not depend on timing.
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"

namespace tern {

namespace {
constexpr size_t kSlots = 4;
}  // namespace

Schedule buildBinomialReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  algo::Program program("binomial", args, rank, nranks);
  const int v = algo::mod(rank - args.root, nranks);
  std::vector<int> children;
  int mask = 1;
  for (; mask < nranks; mask *= 2) {
    if (v & mask) break;
    if (v + mask < nranks) children.push_back(algo::mod(v + mask + args.root, nranks));
  }
  const int parent = v == 0 ? -1 : algo::mod(v - mask + args.root, nranks);
  const auto pcs = algo::pieces({{0, args.count}}, algo::chunkElems(options, program.esize()));
  const size_t slotBytes = algo::maxCount(pcs) * program.esize();
  algo::SlotPool received(program, slotBytes, kSlots * children.size());
  algo::SlotPool partials(program, slotBytes, kSlots);
  for (const algo::ElemRange& pc : pcs) {
    const Span in = program.inputAt(pc);
    if (children.empty()) {
      if (parent >= 0) {
        program.send(parent, in);
      } else {
        program.copy(program.outputAt(pc), in);
      }
      continue;
    }
    std::vector<size_t> slots;
    for (int c : children) {
      slots.push_back(received.acquire());
      program.recv(c, program.scratchAt(slots.back(), pc.count));
    }
    size_t acc = 0;
    if (parent >= 0) acc = partials.acquire();
    const Span dst = parent < 0 ? program.outputAt(pc) : program.scratchAt(acc, pc.count);
    program.reduce(dst, in, program.scratchAt(slots[0], pc.count));
    for (size_t k = 1; k < slots.size(); ++k) program.reduce(dst, dst, program.scratchAt(slots[k], pc.count));
    for (size_t s : slots) received.release(s);
    if (parent < 0) {
      program.finalizeAvg(dst);
    } else {
      program.send(parent, dst);
      partials.release(acc);
    }
  }
  return program.take();
}

}  // namespace tern
