// The two ring phases every ring-shaped algorithm is made of, written once: a pipelined ring reduce-scatter and a
// pipelined ring all-gather over a group of ranks, on arbitrary blocks of the buffer. Ring allreduce is RS + AG over
// all ranks; ring allgather and reducescatter are one phase each; the hierarchical algorithms run them over the
// ranks of a node and over one rank per node.
//
// Shape: g members in ring order; member q sends to q+1 and receives from q-1. Block q (a list of element ranges,
// the same on every rank) is the block that ends up at position q.
//  - Reduce-scatter: in step s (0..g-2) position p sends its partial of block p-s-1 and receives block p-s-2,
//    which it combines with its own contribution. After g-1 steps, block p has passed through every member and
//    its final value sits at position p. Each element is thus reduced by a fixed chain of ranks in a fixed order,
//    and computed exactly once: the result is deterministic and, once distributed, bit-identical everywhere.
//  - All-gather: in step s position p forwards block p-s and receives block p-s-1.
//
// Pipelining: every block is cut into chunks (BuildOptions::pipelineChunkBytes) and every chunk is a separate
// message whose only dependencies are on the same chunk's previous step. While chunk c is being reduced, chunk c+1
// is on the wire and chunk c-1 is being sent on; the transfer of one step overlaps the reduction of another, and
// the ring never waits for a whole block. Messages to one peer are matched in order, so both sides emit chunks in
// the same (step, chunk) order.
//
// Scratch: received chunks land in a small pool of slots (least-recently-used reuse), not in a whole-buffer copy,
// so scratch stays bounded by (in-flight chunks x chunk size) whatever the message size. Two ways to hold partials:
//  - accumulate mode (an accumulator locator is given, e.g. the output of an allreduce): recv slot -> reduce into
//    the accumulator -> send from the accumulator. A slot is free as soon as its reduction ran, a purely local
//    event, so any number of chunks per step pipelines without risk of deadlock.
//  - slot mode (no accumulator, e.g. reduce-scatter whose output holds only the rank's own block): the partial is
//    reduced in place in its slot and sent on from there, so the slot is free only when that send completed, which
//    with a rendezvous transport means "when the next rank posted its receive". If every rank filled all its slots
//    with one step's chunks, each would wait for its successor to free a slot, around the ring: deadlock. So slot
//    mode walks the chunks in windows of kWindow chunks (all steps of a window, then the next window) with more
//    than kWindow slots; a receive then waits only on sends of strictly earlier messages, which is deadlock-free.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/chunking.hpp"
#include "algorithms/program.hpp"

namespace tern::algo {

struct Ring {
  std::vector<int> members;  // global ranks in ring order
  int pos = 0;               // this rank's position in members
  int size() const { return static_cast<int>(members.size()); }
  int rankAt(int q) const { return members[mod(q, size())]; }
};

struct RingReduceScatterPlan {
  Ring ring;
  std::vector<Block> blocks;  // blocks[q] ends fully reduced at position q
  Locator source;             // where this rank's own contribution is (read only)
  Locator accumulator;        // where partials are kept (accumulate mode); empty: slot mode
  Locator result;             // where this rank's own block's final value goes
  bool finalize = false;      // apply the average's division to the result (before anyone sees it)
  size_t chunkElems = SIZE_MAX;
};

struct RingAllGatherPlan {
  Ring ring;
  std::vector<Block> blocks;  // blocks[q] starts at position q
  Locator ownSource;          // where this rank's own block is at the start
  Locator dest;               // where every block goes (the own block is copied there unless it is already)
  size_t chunkElems = SIZE_MAX;
};

void emitRingReduceScatter(Program& program, const RingReduceScatterPlan& plan);
void emitRingAllGather(Program& program, const RingAllGatherPlan& plan);

}  // namespace tern::algo
