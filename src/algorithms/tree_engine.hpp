// Pipelined tree allreduce over a range of the buffer, shared by "tree" (one tree, whole buffer) and "dbtree"
// (two complementary trees, half each).
//
// Up phase, per chunk: a node receives the chunk's partial from each child into a scratch slot, combines it with
// its own input into its output (own contribution first, then children in a fixed order, so the order is the same
// on every run), and sends the partial to its parent. The root finishes the chunk (divides, for avg) and the down
// phase broadcasts it: every node receives the final chunk from its parent into its output and forwards it to its
// children. The final value of each element is computed once, at the root, and then only copied: all ranks end
// with the same bits.
//
// Pipelining: chunks are independent, so chunk c+1 climbs while chunk c is reduced further up and chunk c-L is on
// its way down. Partials accumulate in the output buffer (overwritten by the final value later anyway), so a slot
// is free once its reduction ran: a local event, which keeps the scratch bounded (a few slots per child) without
// any risk of a deadlock.
//
// The caller drives the order: emitUp(c) and emitDown(c) for each chunk, in an order that is the same on every
// rank (e.g. up(c) then down(c - lag)). With two trees, a pair of ranks may be linked in both (parent in one, child
// in the other) and share a FIFO, so the interleaving of the two trees must also be the same everywhere.
#pragma once

#include <vector>

#include "algorithms/chunking.hpp"
#include "algorithms/program.hpp"

namespace tern::algo {

class TreeAllReduce {
 public:
  // order maps tree positions to ranks; links are this rank's position's links (in positions).
  TreeAllReduce(Program& program, const std::vector<int>& order, const TreeLinks& links, const ElemRange& range,
                size_t chunkElems);
  size_t numChunks() const { return pieces_.size(); }
  void emitUp(size_t c);
  void emitDown(size_t c);

 private:
  Program& program_;
  int parent_ = -1;            // rank, -1 at the root
  std::vector<int> children_;  // ranks
  std::vector<ElemRange> pieces_;
  SlotPool pool_;
};

}  // namespace tern::algo
