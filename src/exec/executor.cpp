#include "exec/executor.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "compress/codec.hpp"

namespace tern {

namespace {

// Local steps at least this large are followed by a non-blocking transport progress call (see drainLocal).
constexpr size_t kProgressAfterBytes = 64 * 1024;
// A copy or reduction longer than this, run on the CPU while transfers are in flight, goes in slices of this size
// with a non-blocking progress call between them (see runLocal).
constexpr size_t kLocalSliceBytes = size_t{2} << 20;

size_t localWorkBytes(const Step& st) {
  if (st.kind == StepKind::kEncode || st.kind == StepKind::kDecode || st.kind == StepKind::kCast) {
    return st.elements * sizeof(float);
  }
  return st.dst.bytes;
}

const char* bufferName(BufferId id) {
  switch (id) {
    case BufferId::kInput:
      return "input";
    case BufferId::kOutput:
      return "output";
    case BufferId::kScratch:
      return "scratch";
  }
  return "?";
}

class Run {
 public:
  Run(const Schedule& s, const ExecBuffers& b, const ExecContext& ctx)
      : s_(s),
        b_(b),
        ctx_(ctx),
        compute_(ctx.compute != nullptr ? *ctx.compute : cpuBackend()),
        n_(s.steps.size()),
        remaining_(n_),
        dependents_(n_),
        transfers_(n_),
        sendQueues_(ctx.nranks),
        recvQueues_(ctx.nranks),
        sendHead_(ctx.nranks, 0),
        recvHead_(ctx.nranks, 0),
        ready_(n_, false) {
    for (size_t i = 0; i < n_; ++i) {
      const Step& st = s_.steps[i];
      remaining_[i] = static_cast<uint32_t>(st.deps.size());
      for (uint32_t d : st.deps) dependents_[d].push_back(static_cast<uint32_t>(i));
      if (st.kind == StepKind::kSend) sendQueues_[st.peer].push_back(static_cast<uint32_t>(i));
      if (st.kind == StepKind::kRecv) recvQueues_[st.peer].push_back(static_cast<uint32_t>(i));
    }
  }

  void go() {
    checkBuffers();
    for (size_t i = 0; i < n_; ++i) {
      if (remaining_[i] == 0) becomeReady(static_cast<uint32_t>(i));
    }
    drainLocal();
    while (completed_ < n_) {
      if (ctx_.abortFlag != nullptr && ctx_.abortFlag->load(std::memory_order_relaxed)) {
        throwError(ternRemoteError, "rank %d: %s aborted", ctx_.rank, ctx_.what);
      }
      if (Clock::now() > ctx_.deadline) {
        throwError(ternTimeout,
                   "rank %d: %s timed out (TERN_TIMEOUT) with %zu of %zu steps done, waiting for rank(s)%s", ctx_.rank,
                   ctx_.what, completed_, n_, awaitedPeers().c_str());
      }
      if (inFlight_.empty()) {
        throwError(ternInternalError, "rank %d: %s schedule '%s' is stuck (%zu of %zu steps done)", ctx_.rank,
                   ctx_.what, s_.algorithm.c_str(), completed_, n_);
      }
      int done = ctx_.transport->progress(100);
      if (done > 0) reapTransfers();
      drainLocal();
    }
  }

 private:
  MemRef buffer(BufferId id) const {
    switch (id) {
      case BufferId::kInput:
        return {const_cast<void*>(b_.input.data), b_.input.bytes, b_.input.kind};
      case BufferId::kOutput:
        return b_.output;
      case BufferId::kScratch:
        return b_.scratch;
    }
    return {};
  }
  MemRef ref(const Span& sp) const { return buffer(sp.buffer).slice(sp.offset, sp.bytes); }

  // Every span inside its buffer, every buffer of a memory kind the transport carries and the backend runs on:
  // checked once per call, before any step touches memory.
  void checkBuffers() const {
    bool used[3] = {false, false, false};
    auto check = [&](const Span& sp, size_t step) {
      if (sp.bytes == 0) return;
      const MemRef whole = buffer(sp.buffer);
      used[static_cast<int>(sp.buffer)] = true;
      if (sp.offset > whole.bytes || sp.bytes > whole.bytes - sp.offset) {
        throwError(ternInternalError,
                   "rank %d: %s schedule '%s' step %zu reaches bytes [%zu, %zu) of its %s buffer, which has %zu",
                   ctx_.rank, ctx_.what, s_.algorithm.c_str(), step, sp.offset, sp.offset + sp.bytes,
                   bufferName(sp.buffer), whole.bytes);
      }
    };
    for (size_t i = 0; i < n_; ++i) {
      const Step& st = s_.steps[i];
      check(st.dst, i);
      check(st.src, i);
      check(st.src2, i);
    }
    for (BufferId id : {BufferId::kInput, BufferId::kOutput, BufferId::kScratch}) {
      const MemoryKind kind = buffer(id).kind;
      if (!used[static_cast<int>(id)]) continue;
      if (!compute_.runsOn(kind)) {
        throwError(ternInvalidUsage, "rank %d: %s: the %s buffer is %s memory, which the %s compute backend cannot use",
                   ctx_.rank, ctx_.what, bufferName(id), memoryKindName(kind), compute_.name());
      }
      if (!ctx_.transport->carries(kind)) {
        throwError(ternInvalidUsage, "rank %d: %s: the %s buffer is %s memory, which the %s transport does not carry",
                   ctx_.rank, ctx_.what, bufferName(id), memoryKindName(kind), ctx_.transport->name());
      }
    }
  }

  void becomeReady(uint32_t i) {
    const Step& st = s_.steps[i];
    ready_[i] = true;
    if (st.kind == StepKind::kSend) {
      postQueue(sendQueues_[st.peer], sendHead_[st.peer], true);
    } else if (st.kind == StepKind::kRecv) {
      postQueue(recvQueues_[st.peer], recvHead_[st.peer], false);
    } else {
      local_.push(i);
    }
  }

  // Posts the ready prefix of one peer's queue, keeping FIFO order with the peer.
  void postQueue(const std::vector<uint32_t>& q, size_t& head, bool isSend) {
    while (head < q.size() && ready_[q[head]]) {
      uint32_t i = q[head++];
      const Step& st = s_.steps[i];
      if (isSend) {
        ctx_.transport->postSend(st.peer, ref(st.src), &transfers_[i]);
      } else {
        ctx_.transport->postRecv(st.peer, ref(st.dst), &transfers_[i]);
      }
      inFlight_.push_back(i);
    }
  }

  void runLocal(uint32_t i) {
    const Step& st = s_.steps[i];
    const ComputeBackend& compute = compute_;
    // Posted transfers move only while the transport is progressed: a long copy or reduction run in one piece
    // leaves the wire idle for its whole length (a 2-rank alltoall's own block is half the buffer, copied while the
    // other half crosses the network). In slices, the transport is progressed between them. Element-wise steps, so
    // the bits are the same; slices are whole elements of every datatype.
    const bool sliced = (st.kind == StepKind::kCopy || st.kind == StepKind::kReduce) &&
                        st.dst.bytes > kLocalSliceBytes && !inFlight_.empty() && &compute == &cpuBackend();
    if (sliced) {
      runSliced(st);
      return;
    }
    switch (st.kind) {
      case StepKind::kReduce:
        compute.reduce(ref(st.dst), ref(st.src), ref(st.src2), ctx_.dtype, ctx_.op);
        break;
      case StepKind::kCopy:
        compute.copy(ref(st.dst), ref(st.src));
        break;
      case StepKind::kFinalize:
        if (ctx_.op == ternAvg) compute.finalizeAverage(ref(st.dst), ctx_.dtype, ctx_.nranks);
        break;
      case StepKind::kEncode:
        compute.encode(*ctx_.codec, ctx_.feedback[st.slot], ref(st.src), st.slot == 0 ? ctx_.inputDtype : ternFloat32,
                       st.elements, ref(st.dst), compress::EncodeContext{ctx_.seed, ctx_.step, st.elementOffset});
        break;
      case StepKind::kDecode:
        compute.decode(*ctx_.codec, ref(st.src), st.elements, ref(st.dst), st.accumulate);
        break;
      case StepKind::kCast:
        compute.castFromFloat(ref(st.dst), ctx_.outputDtype, ref(st.src), st.elements);
        break;
      default:
        break;
    }
  }

  void runSliced(const Step& st) {
    const MemRef dst = ref(st.dst);
    const MemRef src = ref(st.src);
    const MemRef src2 = st.kind == StepKind::kReduce ? ref(st.src2) : MemRef{};
    for (size_t at = 0; at < dst.bytes; at += kLocalSliceBytes) {
      const size_t bytes = std::min(kLocalSliceBytes, dst.bytes - at);
      if (st.kind == StepKind::kCopy) {
        compute_.copy(dst.slice(at, bytes), src.slice(at, bytes));
      } else {
        compute_.reduce(dst.slice(at, bytes), src.slice(at, bytes), src2.slice(at, bytes), ctx_.dtype, ctx_.op);
      }
      if (at + bytes < dst.bytes && !inFlight_.empty() && ctx_.transport->progress(0) > 0) reapTransfers();
    }
  }

  void complete(uint32_t i) {
    ++completed_;
    for (uint32_t d : dependents_[i]) {
      if (--remaining_[d] == 0) becomeReady(d);
    }
  }

  void drainLocal() {
    while (!local_.empty()) {
      uint32_t i = local_.top();
      local_.pop();
      runLocal(i);
      complete(i);
      // Posted sends only move when the transport is progressed: after a long local step (a codec pass, a large
      // reduction), push the wire along before the next one, so computation overlaps communication.
      if (!local_.empty() && !inFlight_.empty() && localWorkBytes(s_.steps[i]) >= kProgressAfterBytes) {
        if (ctx_.transport->progress(0) > 0) reapTransfers();
      }
    }
  }

  // " 1 3": the peers of the transfers still in flight, each once (what a timeout was waiting for).
  std::string awaitedPeers() const {
    std::vector<bool> awaited(ctx_.nranks, false);
    for (uint32_t i : inFlight_) {
      if (!transfers_[i].done) awaited[s_.steps[i].peer] = true;
    }
    std::string list;
    for (int p = 0; p < ctx_.nranks; ++p) {
      if (awaited[p]) list += " " + std::to_string(p);
    }
    return list;
  }

  void reapTransfers() {
    size_t keep = 0;
    std::vector<uint32_t> finished;
    for (uint32_t i : inFlight_) {
      if (transfers_[i].done) {
        finished.push_back(i);
      } else {
        inFlight_[keep++] = i;
      }
    }
    inFlight_.resize(keep);
    for (uint32_t i : finished) complete(i);
  }

  const Schedule& s_;
  const ExecBuffers& b_;
  const ExecContext& ctx_;
  const ComputeBackend& compute_;
  size_t n_;
  size_t completed_ = 0;
  std::vector<uint32_t> remaining_;
  std::vector<std::vector<uint32_t>> dependents_;
  std::vector<Transfer> transfers_;
  std::vector<std::vector<uint32_t>> sendQueues_, recvQueues_;
  std::vector<size_t> sendHead_, recvHead_;
  std::vector<bool> ready_;
  // Ready local steps, lowest index first: builders emit steps in the order they want them run (a pipelined
  // schedule's piece k before piece k+1), and the sends of early pieces become ready first.
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> local_;
  std::vector<uint32_t> inFlight_;
};

}  // namespace

void executeSchedule(const Schedule& schedule, const ExecBuffers& buffers, const ExecContext& ctx) {
  Run run(schedule, buffers, ctx);
  run.go();
}

}  // namespace tern
