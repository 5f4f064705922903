// A reference executor for schedules, for tests: runs the schedules of all ranks of a collective in one thread, on
// real bytes, under exactly the executor's rules, in a random legal order, and checks everything a real executor
// would only notice as corruption or a hang:
//  - structure: deps point backwards; peers valid; spans inside their buffers and element-aligned; reduce/copy
//    operands of equal size that alias exactly or not at all; nothing writes the input buffer; non-present buffers
//    (broadcast input on non-roots, reduce output on non-roots) are never touched;
//  - matching: the k-th send from A to B and the k-th receive on B from A exist and have the same size;
//  - hazards (static, complete): every two steps of a rank that touch overlapping bytes, at least one writing, are
//    ordered by a chain of deps (the executor runs anything the deps allow concurrently);
//  - progress: no deadlock, both with eager sends (a send completes on its own) and with rendezvous sends (a send
//    completes only once the matching receive has been posted, as with a transport that does not buffer);
//  - data: no step reads bytes nobody wrote (scratch, or an out-of-place output); the results are left in the
//    buffers for the test to compare.
// The order is random among all legal events (step starts, send completions, deliveries), seeded, so different
// seeds explore different interleavings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "exec/schedule.hpp"
#include "kernels/reduce.hpp"

namespace tern::sim {

// One rank's user memory: one arena, with the input and output as windows into it (overlapping for in-place).
struct RankBuffers {
  std::vector<uint8_t> arena;
  std::vector<uint8_t> defined;  // per byte: 1 when it holds data (initialized input, or written by a step)
  bool hasInput = false;
  size_t inputOffset = 0, inputBytes = 0;
  bool hasOutput = false;
  size_t outputOffset = 0, outputBytes = 0;
};

struct SimOptions {
  uint64_t seed = 1;
  bool rendezvous = false;
  ternDataType_t dtype = ternFloat32;
  ternRedOp_t op = ternSum;
  bool staticHazardCheck = true;
  size_t staticCheckMaxSteps = 8000;  // per rank; above this only the dynamic run checks
};

struct SimResult {
  std::string error;
  bool ok() const { return error.empty(); }
  // Per rank: bit r set when the rank's completion causally follows rank r's start (for barriers).
  std::vector<uint64_t> heardFrom;
  size_t messages = 0;
  size_t bytes = 0;
  size_t steps = 0;
};

namespace detail {

inline const char* kindName(StepKind k) {
  switch (k) {
    case StepKind::kSend:
      return "send";
    case StepKind::kRecv:
      return "recv";
    case StepKind::kReduce:
      return "reduce";
    case StepKind::kCopy:
      return "copy";
    case StepKind::kFinalize:
      return "finalize";
    default:
      return "other";
  }
}

inline const char* bufName(BufferId b) {
  return b == BufferId::kInput ? "input" : b == BufferId::kOutput ? "output" : "scratch";
}

struct Region {
  int mem;  // 0 = the rank's arena, 1 = its scratch
  size_t lo, hi;
};

class Simulator {
 public:
  Simulator(const std::vector<Schedule>& s, std::vector<RankBuffers>& b, const SimOptions& o)
      : sched_(s), bufs_(b), opt_(o), n_(static_cast<int>(s.size())), esize_(dataTypeSize(o.dtype)), rng_(o.seed) {}

  SimResult run() {
    SimResult res;
    if (!validate() || !match() || (opt_.staticHazardCheck && !staticHazards())) {
      res.error = error_;
      return res;
    }
    execute();
    res.error = error_;
    res.heardFrom = rankHeard_;
    res.messages = messages_;
    res.bytes = bytes_;
    for (const auto& s : sched_) res.steps += s.steps.size();
    return res;
  }

 private:
  enum EventKind { kStart, kSendDone, kRecvDone };
  struct Event {
    EventKind kind;
    int rank;
    uint32_t step;
  };
  struct RankState {
    std::vector<uint32_t> pending;  // unfinished deps
    std::vector<uint8_t> state;     // 0 waiting, 1 deps done, 2 started, 3 done
    std::vector<std::vector<uint32_t>> dependents;
    std::vector<std::vector<uint32_t>> sendQ, recvQ;  // per peer, step indices in order
    std::vector<size_t> sendHead, recvHead;
    std::vector<size_t> msgIndex;  // send/recv step -> k (its index in the peer queue)
    std::vector<uint64_t> heard;   // per step knowledge (bit per rank)
    std::vector<uint8_t> scratch, scratchDefined;
  };
  struct Message {
    bool dataReady = false;
    std::vector<uint8_t> data;
    uint64_t heard = 0;
  };

  bool fail(const std::string& m) {
    if (error_.empty()) error_ = m;
    return false;
  }
  std::string where(int r, uint32_t i) const {
    std::ostringstream o;
    const Step& st = sched_[r].steps[i];
    o << "rank " << r << " step " << i << " (" << kindName(st.kind);
    if (st.peer >= 0) o << " peer " << st.peer;
    o << ", schedule '" << sched_[r].algorithm << "')";
    return o.str();
  }

  // Resolves a span to (memory, byte range); checks presence, bounds, alignment.
  bool resolve(int r, uint32_t i, const Span& sp, bool write, Region* out) {
    const RankBuffers& b = bufs_[r];
    if (sp.bytes == 0) {
      *out = {0, 0, 0};
      return true;
    }
    if (esize_ > 0 && (sp.offset % esize_ != 0 || sp.bytes % esize_ != 0)) {
      return fail(where(r, i) + ": span not element-aligned");
    }
    size_t base = 0, size = 0;
    int mem = 0;
    switch (sp.buffer) {
      case BufferId::kInput:
        if (!b.hasInput) return fail(where(r, i) + ": touches the input buffer, which this rank does not have");
        if (write) return fail(where(r, i) + ": writes the input buffer");
        base = b.inputOffset;
        size = b.inputBytes;
        break;
      case BufferId::kOutput:
        if (!b.hasOutput) return fail(where(r, i) + ": touches the output buffer, which this rank does not have");
        base = b.outputOffset;
        size = b.outputBytes;
        break;
      case BufferId::kScratch:
        mem = 1;
        size = sched_[r].scratchBytes;
        break;
    }
    if (sp.offset > size || sp.bytes > size - sp.offset) {
      std::ostringstream o;
      o << where(r, i) << ": " << bufName(sp.buffer) << " span [" << sp.offset << ", +" << sp.bytes
        << ") outside the buffer of " << size << " bytes";
      return fail(o.str());
    }
    *out = {mem, base + sp.offset, base + sp.offset + sp.bytes};
    return true;
  }

  static bool overlap(const Region& a, const Region& b) {
    return a.mem == b.mem && a.lo < b.hi && b.lo < a.hi && a.hi > a.lo && b.hi > b.lo;
  }
  static bool same(const Region& a, const Region& b) { return a.mem == b.mem && a.lo == b.lo && a.hi == b.hi; }

  // Accesses of a step, for hazards: (region, write).
  bool accesses(int r, uint32_t i, std::vector<std::pair<Region, bool>>& acc) {
    acc.clear();
    const Step& st = sched_[r].steps[i];
    Region d{}, a{}, b{};
    switch (st.kind) {
      case StepKind::kSend:
        if (!resolve(r, i, st.src, false, &a)) return false;
        acc.push_back({a, false});
        break;
      case StepKind::kRecv:
        if (!resolve(r, i, st.dst, true, &d)) return false;
        acc.push_back({d, true});
        break;
      case StepKind::kReduce:
        if (!resolve(r, i, st.dst, true, &d) || !resolve(r, i, st.src, false, &a) ||
            !resolve(r, i, st.src2, false, &b)) {
          return false;
        }
        acc.push_back({a, false});
        acc.push_back({b, false});
        acc.push_back({d, true});
        break;
      case StepKind::kCopy:
        if (!resolve(r, i, st.dst, true, &d) || !resolve(r, i, st.src, false, &a)) return false;
        if (!same(a, d)) {  // a same-memory copy is skipped by the executor
          acc.push_back({a, false});
          acc.push_back({d, true});
        }
        break;
      case StepKind::kFinalize:
        if (!resolve(r, i, st.dst, true, &d)) return false;
        acc.push_back({d, true});
        break;
      default:  // codec steps (compressed collectives) are not modelled here
        return fail(where(r, i) + ": step kind not supported by the simulator");
    }
    return true;
  }

  bool validate() {
    rs_.resize(n_);
    std::vector<std::pair<Region, bool>> acc;
    for (int r = 0; r < n_; ++r) {
      const Schedule& s = sched_[r];
      RankState& st = rs_[r];
      const size_t m = s.steps.size();
      st.pending.assign(m, 0);
      st.state.assign(m, 0);
      st.dependents.assign(m, {});
      st.sendQ.assign(n_, {});
      st.recvQ.assign(n_, {});
      st.sendHead.assign(n_, 0);
      st.recvHead.assign(n_, 0);
      st.msgIndex.assign(m, 0);
      st.heard.assign(m, 0);
      st.scratch.assign(s.scratchBytes, 0xA5);
      st.scratchDefined.assign(s.scratchBytes, 0);
      for (uint32_t i = 0; i < m; ++i) {
        const Step& step = s.steps[i];
        for (uint32_t d : step.deps) {
          if (d >= i) return fail(where(r, i) + ": depends on a later step " + std::to_string(d));
          st.dependents[d].push_back(i);
        }
        st.pending[i] = static_cast<uint32_t>(step.deps.size());
        if (!accesses(r, i, acc)) return false;
        switch (step.kind) {
          case StepKind::kSend:
          case StepKind::kRecv:
            if (step.peer < 0 || step.peer >= n_ || step.peer == r) return fail(where(r, i) + ": bad peer");
            if (step.kind == StepKind::kSend) {
              st.msgIndex[i] = st.sendQ[step.peer].size();
              st.sendQ[step.peer].push_back(i);
            } else {
              st.msgIndex[i] = st.recvQ[step.peer].size();
              st.recvQ[step.peer].push_back(i);
            }
            break;
          case StepKind::kReduce: {
            if (step.src.bytes != step.dst.bytes || step.src2.bytes != step.dst.bytes) {
              return fail(where(r, i) + ": reduce operands of different sizes");
            }
            const Region& a = acc[0].first;
            const Region& b = acc[1].first;
            const Region& d = acc[2].first;
            if ((overlap(a, d) && !same(a, d)) || (overlap(b, d) && !same(b, d))) {
              return fail(where(r, i) + ": reduce destination partially overlaps a source");
            }
            break;
          }
          case StepKind::kCopy:
            if (step.src.bytes != step.dst.bytes) return fail(where(r, i) + ": copy of different sizes");
            if (acc.size() == 2 && overlap(acc[0].first, acc[1].first)) {
              return fail(where(r, i) + ": copy source and destination overlap");
            }
            break;
          default:
            break;
        }
      }
    }
    return true;
  }

  bool match() {
    channels_.assign(static_cast<size_t>(n_) * n_, {});
    for (int a = 0; a < n_; ++a) {
      for (int b = 0; b < n_; ++b) {
        if (a == b) continue;
        const auto& sq = rs_[a].sendQ[b];
        const auto& rq = rs_[b].recvQ[a];
        if (sq.size() != rq.size()) {
          std::ostringstream o;
          o << "rank " << a << " sends " << sq.size() << " messages to rank " << b << " which receives " << rq.size()
            << " (schedule '" << sched_[a].algorithm << "')";
          return fail(o.str());
        }
        for (size_t k = 0; k < sq.size(); ++k) {
          size_t sb = sched_[a].steps[sq[k]].src.bytes, rb = sched_[b].steps[rq[k]].dst.bytes;
          if (sb != rb) {
            std::ostringstream o;
            o << "message " << k << " from rank " << a << " to rank " << b << ": " << sb << " bytes sent by "
              << where(a, sq[k]) << ", " << rb << " expected by " << where(b, rq[k]);
            return fail(o.str());
          }
        }
        channels_[static_cast<size_t>(a) * n_ + b].resize(sq.size());
      }
    }
    return true;
  }

  // Every pair of conflicting accesses of one rank must be ordered by deps (transitively).
  bool staticHazards() {
    std::vector<std::pair<Region, bool>> acc;
    for (int r = 0; r < n_; ++r) {
      const Schedule& s = sched_[r];
      const size_t m = s.steps.size();
      if (m == 0 || m > opt_.staticCheckMaxSteps) continue;
      const size_t words = (m + 63) / 64;
      std::vector<uint64_t> anc(m * words, 0);
      for (size_t i = 0; i < m; ++i) {
        uint64_t* ai = &anc[i * words];
        for (uint32_t d : s.steps[i].deps) {
          const uint64_t* ad = &anc[d * words];
          for (size_t w = 0; w < words; ++w) ai[w] |= ad[w];
          ai[d / 64] |= uint64_t{1} << (d % 64);
        }
      }
      struct Item {
        Region reg;
        bool write;
        uint32_t step;
      };
      std::vector<Item> items;
      for (uint32_t i = 0; i < m; ++i) {
        if (!accesses(r, i, acc)) return false;
        for (const auto& [reg, w] : acc) {
          if (reg.hi > reg.lo) items.push_back({reg, w, i});
        }
      }
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return a.reg.mem != b.reg.mem ? a.reg.mem < b.reg.mem : a.reg.lo < b.reg.lo;
      });
      std::vector<const Item*> active;
      for (const Item& it : items) {
        size_t keep = 0;
        for (const Item* a : active) {
          if (a->reg.mem == it.reg.mem && a->reg.hi > it.reg.lo) active[keep++] = a;
        }
        active.resize(keep);
        for (const Item* a : active) {
          if (a->step == it.step || (!a->write && !it.write)) continue;
          const uint32_t hi = std::max(a->step, it.step), lo = std::min(a->step, it.step);
          if (!((anc[hi * words + lo / 64] >> (lo % 64)) & 1)) {
            std::ostringstream o;
            o << "hazard: " << where(r, lo) << " and step " << hi << " (" << kindName(s.steps[hi].kind)
              << ") touch the same bytes, one writing, without a dependency chain";
            return fail(o.str());
          }
        }
        active.push_back(&it);
      }
    }
    return true;
  }

  uint8_t* ptr(int r, const Span& sp, uint8_t** def) {
    RankBuffers& b = bufs_[r];
    switch (sp.buffer) {
      case BufferId::kInput:
        *def = b.defined.data() + b.inputOffset + sp.offset;
        return b.arena.data() + b.inputOffset + sp.offset;
      case BufferId::kOutput:
        *def = b.defined.data() + b.outputOffset + sp.offset;
        return b.arena.data() + b.outputOffset + sp.offset;
      case BufferId::kScratch:
        *def = rs_[r].scratchDefined.data() + sp.offset;
        return rs_[r].scratch.data() + sp.offset;
    }
    return nullptr;
  }
  bool checkDefined(int r, uint32_t i, const Span& sp, const uint8_t* def) {
    const void* hole = sp.bytes > 0 ? std::memchr(def, 0, sp.bytes) : nullptr;
    if (hole != nullptr) {
      std::ostringstream o;
      o << where(r, i) << ": reads uninitialized " << bufName(sp.buffer) << " bytes at offset "
        << sp.offset + static_cast<size_t>(static_cast<const uint8_t*>(hole) - def);
      return fail(o.str());
    }
    return true;
  }

  void push(EventKind k, int r, uint32_t i) { events_.push_back({k, r, i}); }

  // Step i of rank r has all deps done: start it if FIFO order allows.
  void depsDone(int r, uint32_t i) {
    RankState& st = rs_[r];
    st.state[i] = 1;
    const Step& step = sched_[r].steps[i];
    if (step.kind == StepKind::kSend) {
      const auto& q = st.sendQ[step.peer];
      if (q[st.sendHead[step.peer]] == i) push(kStart, r, i);
    } else if (step.kind == StepKind::kRecv) {
      const auto& q = st.recvQ[step.peer];
      if (q[st.recvHead[step.peer]] == i) push(kStart, r, i);
    } else {
      push(kStart, r, i);
    }
  }

  uint64_t depHeard(int r, uint32_t i) {
    uint64_t h = n_ <= 64 ? (uint64_t{1} << r) : 0;
    for (uint32_t d : sched_[r].steps[i].deps) h |= rs_[r].heard[d];
    return h;
  }

  void complete(int r, uint32_t i, uint64_t heard) {
    RankState& st = rs_[r];
    st.state[i] = 3;
    st.heard[i] = heard;
    ++done_;
    for (uint32_t d : st.dependents[i]) {
      if (--st.pending[d] == 0) depsDone(r, d);
    }
  }

  void start(int r, uint32_t i) {
    RankState& st = rs_[r];
    const Step& step = sched_[r].steps[i];
    st.state[i] = 2;
    uint8_t *dd = nullptr, *da = nullptr, *db = nullptr;
    switch (step.kind) {
      case StepKind::kSend: {
        const uint32_t nextIdx = static_cast<uint32_t>(++st.sendHead[step.peer]);
        const auto& q = st.sendQ[step.peer];
        if (nextIdx < q.size() && st.state[q[nextIdx]] == 1) push(kStart, r, q[nextIdx]);
        const uint32_t rs = rs_[step.peer].recvQ[r][st.msgIndex[i]];
        if (!opt_.rendezvous || rs_[step.peer].state[rs] >= 2) push(kSendDone, r, i);
        return;
      }
      case StepKind::kRecv: {
        const uint32_t nextIdx = static_cast<uint32_t>(++st.recvHead[step.peer]);
        const auto& q = st.recvQ[step.peer];
        if (nextIdx < q.size() && st.state[q[nextIdx]] == 1) push(kStart, r, q[nextIdx]);
        const size_t k = st.msgIndex[i];
        const uint32_t ss = rs_[step.peer].sendQ[r][k];
        if (opt_.rendezvous && rs_[step.peer].state[ss] == 2) push(kSendDone, step.peer, ss);
        if (channels_[static_cast<size_t>(step.peer) * n_ + r][k].dataReady) push(kRecvDone, r, i);
        return;
      }
      case StepKind::kCopy: {
        uint8_t* d = ptr(r, step.dst, &dd);
        uint8_t* s = ptr(r, step.src, &da);
        if (d != s && step.dst.bytes > 0) {
          if (!checkDefined(r, i, step.src, da)) return;
          std::memmove(d, s, step.dst.bytes);
          std::memset(dd, 1, step.dst.bytes);
        }
        break;
      }
      case StepKind::kReduce: {
        uint8_t* d = ptr(r, step.dst, &dd);
        uint8_t* a = ptr(r, step.src, &da);
        uint8_t* b = ptr(r, step.src2, &db);
        if (!checkDefined(r, i, step.src, da) || !checkDefined(r, i, step.src2, db)) return;
        if (step.dst.bytes > 0) tern::reduce(d, a, b, step.dst.bytes / esize_, opt_.dtype, opt_.op);
        std::memset(dd, 1, step.dst.bytes);
        break;
      }
      case StepKind::kFinalize: {
        uint8_t* d = ptr(r, step.dst, &dd);
        if (!checkDefined(r, i, step.dst, dd)) return;
        if (opt_.op == ternAvg && step.dst.bytes > 0) {
          tern::finalizeAverage(d, step.dst.bytes / esize_, opt_.dtype, n_);
        }
        break;
      }
      default:
        fail(where(r, i) + ": step kind not supported by the simulator");
        return;
    }
    complete(r, i, depHeard(r, i));
  }

  void sendDone(int r, uint32_t i) {
    const Step& step = sched_[r].steps[i];
    uint8_t* def = nullptr;
    const uint8_t* src = ptr(r, step.src, &def);
    if (!checkDefined(r, i, step.src, def)) return;
    const size_t k = rs_[r].msgIndex[i];
    Message& m = channels_[static_cast<size_t>(r) * n_ + step.peer][k];
    m.data.assign(src, src + step.src.bytes);
    m.dataReady = true;
    m.heard = depHeard(r, i);
    ++messages_;
    bytes_ += step.src.bytes;
    complete(r, i, m.heard);
    const uint32_t rs = rs_[step.peer].recvQ[r][k];
    if (rs_[step.peer].state[rs] == 2) push(kRecvDone, step.peer, rs);
  }

  void recvDone(int r, uint32_t i) {
    const Step& step = sched_[r].steps[i];
    const size_t k = rs_[r].msgIndex[i];
    Message& m = channels_[static_cast<size_t>(step.peer) * n_ + r][k];
    uint8_t* def = nullptr;
    uint8_t* dst = ptr(r, step.dst, &def);
    if (!m.data.empty()) std::memcpy(dst, m.data.data(), m.data.size());
    if (step.dst.bytes > 0) std::memset(def, 1, step.dst.bytes);
    m.data.clear();
    m.data.shrink_to_fit();
    complete(r, i, depHeard(r, i) | m.heard);
  }

  void execute() {
    size_t total = 0;
    for (int r = 0; r < n_; ++r) {
      total += sched_[r].steps.size();
      for (uint32_t i = 0; i < sched_[r].steps.size(); ++i) {
        if (rs_[r].pending[i] == 0) depsDone(r, i);
      }
    }
    while (!events_.empty() && error_.empty()) {
      const size_t pick = std::uniform_int_distribution<size_t>(0, events_.size() - 1)(rng_);
      const Event e = events_[pick];
      events_[pick] = events_.back();
      events_.pop_back();
      switch (e.kind) {
        case kStart:
          start(e.rank, e.step);
          break;
        case kSendDone:
          sendDone(e.rank, e.step);
          break;
        case kRecvDone:
          recvDone(e.rank, e.step);
          break;
      }
    }
    if (!error_.empty()) return;
    if (done_ != total) {
      std::ostringstream o;
      o << "deadlock (" << (opt_.rendezvous ? "rendezvous" : "eager") << " sends): " << done_ << " of " << total
        << " steps done;";
      int shown = 0;
      for (int r = 0; r < n_ && shown < 6; ++r) {
        for (uint32_t i = 0; i < sched_[r].steps.size(); ++i) {
          if (rs_[r].state[i] != 3) {
            o << " first pending: " << where(r, i) << " state " << int(rs_[r].state[i]) << ";";
            ++shown;
            break;
          }
        }
      }
      error_ = o.str();
      return;
    }
    rankHeard_.assign(n_, 0);
    for (int r = 0; r < n_; ++r) {
      uint64_t h = n_ <= 64 ? (uint64_t{1} << r) : 0;
      for (uint64_t x : rs_[r].heard) h |= x;
      rankHeard_[r] = h;
    }
  }

  const std::vector<Schedule>& sched_;
  std::vector<RankBuffers>& bufs_;
  SimOptions opt_;
  int n_;
  size_t esize_;
  std::mt19937_64 rng_;
  std::vector<RankState> rs_;
  std::vector<std::vector<Message>> channels_;
  std::vector<Event> events_;
  std::vector<uint64_t> rankHeard_;
  size_t done_ = 0;
  size_t messages_ = 0, bytes_ = 0;
  std::string error_;
};

}  // namespace detail

// Runs the schedules (one per rank, index = rank) over the buffers; see the file comment for what is checked.
inline SimResult simulate(const std::vector<Schedule>& schedules, std::vector<RankBuffers>& buffers,
                          const SimOptions& options) {
  detail::Simulator sim(schedules, buffers, options);
  return sim.run();
}

}  // namespace tern::sim
