#include "algorithms/tree_engine.hpp"

namespace tern::algo {

namespace {
constexpr size_t kSlotsPerChild = 4;
}  // namespace

TreeAllReduce::TreeAllReduce(Program& program, const std::vector<int>& order, const TreeLinks& links,
                             const ElemRange& range, size_t chunkElems)
    : program_(program),
      pieces_(pieces({range}, chunkElems)),
      pool_(program, maxCount(pieces_) * program.esize(), kSlotsPerChild * links.children.size()) {
  parent_ = links.parent < 0 ? -1 : order[links.parent];
  for (int c : links.children) children_.push_back(order[c]);
}

void TreeAllReduce::emitUp(size_t c) {
  const ElemRange& pc = pieces_[c];
  const Span in = program_.inputAt(pc);
  const Span out = program_.outputAt(pc);
  if (children_.empty()) {
    if (parent_ >= 0) {
      program_.send(parent_, in);  // a leaf's partial is its input: no copy, no wait
    } else {
      program_.copy(out, in);  // a single-node tree
    }
    return;
  }
  // Post every child's receive first, so both transfers are in flight together.
  std::vector<size_t> slots;
  for (int child : children_) {
    slots.push_back(pool_.acquire());
    program_.recv(child, program_.scratchAt(slots.back(), pc.count));
  }
  program_.reduce(out, in, program_.scratchAt(slots[0], pc.count));
  for (size_t k = 1; k < slots.size(); ++k) program_.reduce(out, out, program_.scratchAt(slots[k], pc.count));
  for (size_t s : slots) pool_.release(s);
  if (parent_ >= 0) {
    program_.send(parent_, out);
  } else {
    program_.finalizeAvg(out);
  }
}

void TreeAllReduce::emitDown(size_t c) {
  const Span out = program_.outputAt(pieces_[c]);
  if (parent_ >= 0) program_.recv(parent_, out);
  for (int child : children_) program_.send(child, out);
}

}  // namespace tern::algo
