// Program: how builders write schedules.
//
// A builder writes one rank's part of a collective as if it were a sequential program: "send this span, receive
// into that one, reduce these two into a third", in an order that would be correct if every step ran to completion
// before the next one started. The Program turns that program into a Schedule whose steps may run concurrently: it
// records which bytes every step reads and writes and makes each step depend on the earlier steps it conflicts
// with (read-after-write, write-after-read, write-after-write). The executor does no hazard tracking of its own,
// so this is the one place where those dependencies are computed, and builders cannot forget one.
//
// Why not write dependencies by hand: a pipelined ring touches the same scratch slot, output chunk and input chunk
// from several steps (a receive lands in a slot, a reduction reads it, the slot is reused K receives later, the
// reduced chunk is sent on, and in the all-gather phase a receive overwrites the very chunk the reduce-scatter phase
// sent). Each of those is a dependency that is easy to miss and only shows up as rare data corruption under an
// unlucky interleaving. Deriving them from the spans makes the schedule exactly as parallel as the data allows.
//
// In-place calls alias the user's buffers (AllReduce: input == output; AllGather: input is the rank's block of
// the output; ReduceScatter: output is the rank's block of the input; ...). The Program knows those aliasings from
// CollArgs, so that a write through kOutput is seen to conflict with a read through kInput of the same bytes, and
// it drops copies whose source and destination are the same memory.
//
// Dependencies only ever point backwards, so the program order must itself be a correct sequential program: a
// builder that reuses a scratch slot must do so after (in program order) the last step that needs the old content.
// SlotPool below hands out slots in least-recently-released order, which both keeps that rule and spaces reuse as
// far apart as possible so that several chunks are in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "algorithms/chunking.hpp"
#include "exec/collective.hpp"
#include "exec/schedule.hpp"

namespace tern::algo {

// Maps elements of the collective's layout to the span where this rank keeps them (the input, the output, or some
// scratch area), so that the ring/tree engines can be told "your contribution is here, accumulate there" without
// knowing which collective they serve.
using Locator = std::function<Span(size_t elemOffset, size_t elemCount)>;

class Program {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // returned for steps that were elided (empty, or same-memory copy)

  Program(std::string algorithm, const CollArgs& args, int rank, int nranks);

  const CollArgs& args() const { return args_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  size_t esize() const { return esize_; }

  // Spans from element offsets/counts (scratch offsets are bytes, as handed out by allocScratch).
  Span inputAt(size_t elemOffset, size_t elemCount) const;
  Span outputAt(size_t elemOffset, size_t elemCount) const;
  Span scratchAt(size_t byteOffset, size_t elemCount) const;
  Span inputAt(const ElemRange& r) const { return inputAt(r.offset, r.count); }
  Span outputAt(const ElemRange& r) const { return outputAt(r.offset, r.count); }

  // Locators for layouts that start baseElems elements before the buffer (e.g. AllGather: block r of the output
  // layout is this rank's input when r == rank, so the input locator for that layout has base rank*count).
  Locator inputLocator(size_t baseElems = 0) const;
  Locator outputLocator(size_t baseElems = 0) const;
  // Elements [baseElems, ...) of the layout live contiguously in scratch from byteOffset.
  Locator scratchLocator(size_t byteOffset, size_t baseElems) const;

  // Steps. `after` adds explicit dependencies (for ordering that is not about memory, e.g. barrier rounds); kNone
  // entries are ignored. Sends and receives are emitted even when empty (a zero-byte message is a signal); empty
  // local steps are dropped.
  uint32_t send(int peer, const Span& src, const std::vector<uint32_t>& after = {});
  uint32_t recv(int peer, const Span& dst, const std::vector<uint32_t>& after = {});
  uint32_t reduce(const Span& dst, const Span& a, const Span& b);
  uint32_t copy(const Span& dst, const Span& src);
  // The average's division, emitted only for ternAvg on more than one rank (it is the identity otherwise).
  uint32_t finalizeAvg(const Span& dst);

  // Bump allocation of scratch bytes (64-byte aligned so every element type stays aligned).
  size_t allocScratch(size_t bytes);

  Schedule take();

 private:
  // Last writer and readers-since-then of a byte range of one memory.
  struct Segment {
    uint32_t writer = kNone;
    std::vector<uint32_t> readers;
  };
  // Interval map over one memory: key = segment start; a segment runs to the next key.
  class Tracker {
   public:
    Tracker() { segs_.emplace(0, Segment{}); }
    void collect(size_t off, size_t len, bool write, std::vector<uint32_t>& deps) const;
    void apply(size_t off, size_t len, bool write, uint32_t step);

   private:
    std::map<size_t, Segment>::iterator split(size_t pos);
    std::map<size_t, Segment> segs_;
  };
  struct Access {
    int mem;
    size_t off;
    size_t len;
    bool write;
  };

  // Memory id (0 = input space, 1 = output space, 2 = scratch) and offset of a span after resolving aliasing.
  Access canonical(const Span& s, bool write) const;
  uint32_t add(Step step, const std::vector<Access>& accesses, const std::vector<uint32_t>& after);

  CollArgs args_;
  int rank_;
  int nranks_;
  size_t esize_;
  bool inputAliasesOutput_ = false;  // input bytes live in the output at inputBase_
  size_t inputBase_ = 0;
  bool outputAliasesInput_ = false;  // output bytes live in the input at outputBase_
  size_t outputBase_ = 0;
  Tracker trackers_[3];
  Schedule schedule_;
  size_t scratchTop_ = 0;
};

// Scratch slots of a fixed size for chunks in flight. acquire() hands out a fresh slot until minSlots exist, then
// the least recently released one, and grows only if every slot is held. With the Program's derived dependencies, a
// receive into a reused slot waits exactly for the steps that used the previous content, and least-recently-used
// reuse puts minSlots-1 other chunks between two uses of one slot: that is the pipeline depth.
class SlotPool {
 public:
  SlotPool(Program& program, size_t slotBytes, size_t minSlots);
  size_t acquire();
  void release(size_t offset);

 private:
  Program& program_;
  size_t slotBytes_;
  size_t minSlots_;
  size_t created_ = 0;
  std::deque<size_t> free_;
};

}  // namespace tern::algo
