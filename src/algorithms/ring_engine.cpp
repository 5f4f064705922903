#include "algorithms/ring_engine.hpp"

#include <algorithm>

namespace tern::algo {

namespace {

// Slot mode window and the slots it needs: more slots than chunks per window step, so that a receive never has to
// reuse the slot whose send was emitted just before it (see the header).
constexpr size_t kWindow = 4;
constexpr size_t kSlotModeSlots = 2 * kWindow + 1;
// Accumulate mode: receives that may be outstanding at once. Slots are freed locally, so this is purely a
// throughput/scratch trade-off.
constexpr size_t kAccumulateSlots = 4;

std::vector<std::vector<ElemRange>> allPieces(const std::vector<Block>& blocks, size_t chunk, size_t* maxPieces,
                                              size_t* maxElems) {
  std::vector<std::vector<ElemRange>> out(blocks.size());
  *maxPieces = 0;
  *maxElems = 0;
  for (size_t q = 0; q < blocks.size(); ++q) {
    out[q] = pieces(blocks[q], chunk);
    *maxPieces = std::max(*maxPieces, out[q].size());
    *maxElems = std::max(*maxElems, maxCount(out[q]));
  }
  return out;
}

}  // namespace

void emitRingReduceScatter(Program& program, const RingReduceScatterPlan& plan) {
  const int g = plan.ring.size();
  const int p = plan.ring.pos;
  size_t maxPieces = 0, maxElems = 0;
  const auto pcs = allPieces(plan.blocks, plan.chunkElems, &maxPieces, &maxElems);

  if (g == 1) {
    for (const ElemRange& pc : pcs[0]) {
      program.copy(plan.result(pc.offset, pc.count), plan.source(pc.offset, pc.count));
      if (plan.finalize) program.finalizeAvg(plan.result(pc.offset, pc.count));
    }
    return;
  }

  const bool slotMode = !plan.accumulator;
  const size_t window = slotMode ? kWindow : std::max<size_t>(maxPieces, 1);
  SlotPool pool(program, maxElems * program.esize(), slotMode ? kSlotModeSlots : kAccumulateSlots);
  const int next = plan.ring.rankAt(p + 1);
  const int prev = plan.ring.rankAt(p - 1);
  // Slot mode: the slot that holds the partial of (block, piece) between its reduction and its forwarding send.
  std::vector<std::vector<size_t>> held(g);
  for (int q = 0; q < g; ++q) held[q].assign(pcs[q].size(), 0);

  for (size_t w0 = 0; w0 < maxPieces; w0 += window) {
    const size_t w1 = std::min(w0 + window, maxPieces);
    for (int s = 0; s < g - 1; ++s) {
      const int sb = mod(p - s - 1, g);
      const int rb = mod(p - s - 2, g);
      const bool last = (s == g - 2);
      for (size_t c = w0; c < w1; ++c) {
        if (c < pcs[sb].size()) {
          const ElemRange& pc = pcs[sb][c];
          Span src;
          if (s == 0) {
            src = plan.source(pc.offset, pc.count);  // step 0 forwards the raw contribution: no wait at all
          } else if (slotMode) {
            src = program.scratchAt(held[sb][c], pc.count);
          } else {
            src = plan.accumulator(pc.offset, pc.count);
          }
          program.send(next, src);
          if (s > 0 && slotMode) pool.release(held[sb][c]);
        }
        if (c < pcs[rb].size()) {
          const ElemRange& pc = pcs[rb][c];
          const size_t slot = pool.acquire();
          const Span in = program.scratchAt(slot, pc.count);
          program.recv(prev, in);
          // Upstream partial first, own contribution second: the same operand order at every hop.
          if (last) {
            const Span res = plan.result(pc.offset, pc.count);
            program.reduce(res, in, plan.source(pc.offset, pc.count));
            if (plan.finalize) program.finalizeAvg(res);
            pool.release(slot);
          } else if (slotMode) {
            program.reduce(in, in, plan.source(pc.offset, pc.count));
            held[rb][c] = slot;
          } else {
            program.reduce(plan.accumulator(pc.offset, pc.count), in, plan.source(pc.offset, pc.count));
            pool.release(slot);
          }
        }
      }
    }
  }
}

void emitRingAllGather(Program& program, const RingAllGatherPlan& plan) {
  const int g = plan.ring.size();
  const int p = plan.ring.pos;
  size_t maxPieces = 0, maxElems = 0;
  const auto pcs = allPieces(plan.blocks, plan.chunkElems, &maxPieces, &maxElems);

  // The own block goes to its place in the destination; step 0 sends from the source directly, so this copy is
  // off the critical path (and elided entirely when source and destination are the same memory).
  for (const ElemRange& pc : pcs[p]) program.copy(plan.dest(pc.offset, pc.count), plan.ownSource(pc.offset, pc.count));
  if (g == 1) return;

  const int next = plan.ring.rankAt(p + 1);
  const int prev = plan.ring.rankAt(p - 1);
  for (int s = 0; s < g - 1; ++s) {
    const int sb = mod(p - s, g);
    const int rb = mod(p - s - 1, g);
    const size_t n = std::max(pcs[sb].size(), pcs[rb].size());
    for (size_t c = 0; c < n; ++c) {
      if (c < pcs[sb].size()) {
        const ElemRange& pc = pcs[sb][c];
        program.send(next, s == 0 ? plan.ownSource(pc.offset, pc.count) : plan.dest(pc.offset, pc.count));
      }
      // Received chunks land in their final place and are forwarded from there in the next step.
      if (c < pcs[rb].size()) {
        const ElemRange& pc = pcs[rb][c];
        program.recv(prev, plan.dest(pc.offset, pc.count));
      }
    }
  }
}

}  // namespace tern::algo
