#include "planner/simulator.hpp"

#include <algorithm>
#include <cstdint>
#include <queue>

#include "base/error.hpp"

namespace tern::planner {

namespace {

// A point in time and how it came about.
struct Lin {
  double t = 0;
  Breakdown b;
};

inline const Lin& later(const Lin& a, const Lin& b) { return b.t > a.t ? b : a; }

struct Event {
  double t;
  uint64_t seq;  // ties resolve in creation order: deterministic on every rank and run
  int rank;
  uint32_t step;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Simulation {
 public:
  Simulation(const std::vector<Schedule>& s, const LinkTable& links, const SimCosts& costs)
      : s_(s),
        links_(links),
        costs_(costs),
        n_(static_cast<int>(s.size())),
        ranks_(n_),
        pairs_(static_cast<size_t>(n_) * n_),
        pairFree_(static_cast<size_t>(n_) * n_),
        ports_(links.numPorts()),
        busy_(links.numPorts(), 0.0),
        computeFree_(n_),
        codecFactor_(codecCacheFactor(costs.codec, costs.workingSet)) {
    for (int r = 0; r < n_; ++r) {
      RankState& st = ranks_[r];
      const std::vector<Step>& steps = s_[r].steps;
      st.remaining.resize(steps.size());
      st.at.resize(steps.size());
      st.ready.assign(steps.size(), false);
      st.depStart.assign(steps.size() + 1, 0);
      for (size_t i = 0; i < steps.size(); ++i) {
        st.remaining[i] = static_cast<uint32_t>(steps[i].deps.size());
        for (uint32_t d : steps[i].deps) ++st.depStart[d + 1];
      }
      for (size_t i = 0; i < steps.size(); ++i) st.depStart[i + 1] += st.depStart[i];
      st.dependents.resize(st.depStart.back());
      std::vector<uint32_t> fill(st.depStart.begin(), st.depStart.end() - 1);
      for (size_t i = 0; i < steps.size(); ++i) {
        for (uint32_t d : steps[i].deps) st.dependents[fill[d]++] = static_cast<uint32_t>(i);
      }
      st.sends.resize(n_);
      st.recvs.resize(n_);
      st.sendHead.assign(n_, 0);
      st.recvHead.assign(n_, 0);
      for (size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        if (step.kind != StepKind::kSend && step.kind != StepKind::kRecv) continue;
        if (step.peer < 0 || step.peer >= n_ || step.peer == r) {
          throwError(ternInternalError, "cost model: rank %d step %zu of '%s' names peer %d", r, i,
                     s_[r].algorithm.c_str(), step.peer);
        }
        (step.kind == StepKind::kSend ? st.sends : st.recvs)[step.peer].push_back(static_cast<uint32_t>(i));
      }
      total_ += steps.size();
    }
  }

  SimResult run() {
    for (int r = 0; r < n_; ++r) {
      for (size_t i = 0; i < s_[r].steps.size(); ++i) {
        if (ranks_[r].remaining[i] == 0) dispatch(r, static_cast<uint32_t>(i));
      }
    }
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      now_ = e.t;
      complete(e.rank, e.step);
    }
    SimResult out;
    out.messages = messages_;
    out.wireBytes = wireBytes_;
    if (completed_ != total_) {
      out.error = format(
          "cost model: %zu of %zu steps of '%s' can never run (unmatched send/receive or a "
          "dependency cycle)",
          total_ - completed_, total_, s_.empty() ? "" : s_[0].algorithm.c_str());
      return out;
    }
    Lin end;
    for (int r = 0; r < n_; ++r) {
      for (const Lin& l : ranks_[r].at) end = later(end, l);
    }
    out.seconds = end.t;
    out.critical = end.b;
    out.portBusy = busy_;
    double most = 0;
    for (int p = 0; p < static_cast<int>(busy_.size()); ++p) {
      if (busy_[p] > most) {
        most = busy_[p];
        out.busiestPort = p;
      }
    }
    return out;
  }

 private:
  struct RankState {
    std::vector<uint32_t> remaining;
    std::vector<Lin> at;  // ready time until the step runs, then its completion time
    std::vector<bool> ready;
    std::vector<uint32_t> depStart, dependents;       // CSR of the reverse dependency graph
    std::vector<std::vector<uint32_t>> sends, recvs;  // per peer, in step order
    std::vector<size_t> sendHead, recvHead;
  };
  // When a port is held: intervals sorted by start (and so by end, since they never overlap). A transfer takes the
  // earliest gap that fits on every port it needs, not only the time after the last reservation: a rank that posts
  // sends to several peers at once (pairwise all-to-all) has them carried as the receivers' ports allow, in whatever
  // order fits, as the executor's concurrent sends are. Intervals that ended before the simulation's present are
  // never looked at again.
  struct Busy {
    double start;
    Lin end;
  };
  struct PortTimeline {
    std::vector<Busy> held;
    size_t live = 0;  // held[live..] end after the simulation's present
  };
  struct PortUse {
    int port;
    double seconds;
  };

  // The first interval of the port that ends after t, or nullptr.
  const Busy* firstEndingAfter(PortTimeline& pt, double t) {
    while (pt.live < pt.held.size() && pt.held[pt.live].end.t <= now_) ++pt.live;
    auto it = std::upper_bound(pt.held.begin() + static_cast<std::ptrdiff_t>(pt.live), pt.held.end(), t,
                               [](double v, const Busy& b) { return v < b.end.t; });
    return it == pt.held.end() ? nullptr : &*it;
  }

  // The earliest start at or after `from` where every use fits its port's gaps.
  Lin earliestFit(Lin from, const PortUse* uses, size_t count) {
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t k = 0; k < count; ++k) {
        const Busy* b = firstEndingAfter(ports_[uses[k].port], from.t);
        if (b != nullptr && b->start < from.t + uses[k].seconds) {
          from = b->end;
          moved = true;
        }
      }
    }
    return from;
  }

  void hold(int port, double start, const Lin& end) {
    std::vector<Busy>& held = ports_[port].held;
    auto it = std::upper_bound(held.begin(), held.end(), start, [](double v, const Busy& b) { return v < b.start; });
    held.insert(it, Busy{start, end});
  }

  struct PairState {
    std::vector<Lin> arrivals;                      // per message, in order
    std::vector<std::pair<uint32_t, Lin>> waiting;  // posted receives without a message yet, per index
    size_t received = 0;                            // receives posted so far
  };

  void push(int rank, uint32_t step, const Lin& when) {
    ranks_[rank].at[step] = when;
    events_.push({when.t, seq_++, rank, step});
  }

  void dispatch(int r, uint32_t i) {
    RankState& st = ranks_[r];
    const Step& step = s_[r].steps[i];
    switch (step.kind) {
      case StepKind::kSend:
        st.ready[i] = true;
        postSends(r, step.peer);
        return;
      case StepKind::kRecv:
        st.ready[i] = true;
        postRecvs(r, step.peer);
        return;
      default:
        break;
    }
    // Local work: one at a time per rank, in the order it became ready.
    const ComputeCost& cc = links_.compute(r);
    Lin t = later(st.at[i], computeFree_[r]);
    double secs = 0;
    switch (step.kind) {
      case StepKind::kReduce:
        secs = static_cast<double>(step.dst.bytes) * cc.reduceBeta;
        t.b.reduce += secs;
        break;
      case StepKind::kEncode:
        secs = static_cast<double>(step.elements) * 4.0 * costs_.codec.encodeBeta * links_.codecScale(r) * codecFactor_;
        t.b.codec += secs;
        break;
      case StepKind::kDecode:
        secs = static_cast<double>(step.elements) * 4.0 * costs_.codec.decodeBeta * links_.codecScale(r) * codecFactor_;
        t.b.codec += secs;
        break;
      case StepKind::kCast:
        secs = static_cast<double>(step.elements) * 4.0 * cc.copyBeta;
        t.b.copy += secs;
        break;
      case StepKind::kCopy:
        if (step.dst.buffer == step.src.buffer && step.dst.offset == step.src.offset) break;
        [[fallthrough]];
      default:  // copy, finalize, and kinds this model does not know yet: one pass over the bytes
        secs = static_cast<double>(step.dst.bytes) * cc.copyBeta;
        t.b.copy += secs;
        break;
    }
    t.t += secs;
    computeFree_[r] = t;
    push(r, i, t);
  }

  void postSends(int r, int q) {
    RankState& st = ranks_[r];
    std::vector<uint32_t>& queue = st.sends[q];
    size_t& head = st.sendHead[q];
    while (head < queue.size() && st.ready[queue[head]]) {
      const uint32_t i = queue[head++];
      transfer(r, q, i);
    }
  }

  void transfer(int r, int q, uint32_t i) {
    const Step& step = s_[r].steps[i];
    const PairLink& l = links_.pair(r, q);
    const double bytes = static_cast<double>(step.src.bytes);
    const int cls = static_cast<int>(l.cls);
    const double wire = bytes * cachedBeta(l.beta, l.cache, costs_.workingSet);
    const double nicWire = bytes * l.nicBeta;
    const PortUse uses[] = {{l.sendPort, wire}, {l.recvPort, wire}, {l.nicOut, nicWire}, {l.nicIn, nicWire}};
    const size_t used = l.nicOut >= 0 ? 4 : 2;
    // Messages of one pair leave in order (one connection or FIFO per pair), and nothing starts in the past.
    Lin& pairFree = pairFree_[static_cast<size_t>(r) * n_ + q];
    Lin from = later(ranks_[r].at[i], pairFree);
    if (from.t < now_) from.t = now_;
    const Lin start = earliestFit(from, uses, used);
    Lin end = start;
    end.t += wire;
    end.b.transfer[cls] += wire;
    hold(l.sendPort, start.t, end);
    hold(l.recvPort, start.t, end);
    busy_[l.sendPort] += wire;
    busy_[l.recvPort] += wire;
    if (l.nicOut >= 0) {
      Lin nicEnd = start;
      nicEnd.t += nicWire;
      nicEnd.b.transfer[cls] += nicWire;
      hold(l.nicOut, start.t, nicEnd);
      hold(l.nicIn, start.t, nicEnd);
      busy_[l.nicOut] += nicWire;
      busy_[l.nicIn] += nicWire;
    }
    pairFree = start;
    ++messages_;
    wireBytes_ += bytes;
    push(r, i, end);  // the send is done when its bytes are out
    Lin arrival = end;
    arrival.t += l.alpha;
    arrival.b.latency[cls] += l.alpha;
    PairState& ps = pairs_[static_cast<size_t>(r) * n_ + q];
    const size_t k = ps.arrivals.size();
    ps.arrivals.push_back(arrival);
    if (k < ps.waiting.size()) {
      const auto& [recvStep, posted] = ps.waiting[k];
      push(q, recvStep, later(posted, arrival));
    }
  }

  void postRecvs(int r, int q) {
    RankState& st = ranks_[r];
    std::vector<uint32_t>& queue = st.recvs[q];
    size_t& head = st.recvHead[q];
    PairState& ps = pairs_[static_cast<size_t>(q) * n_ + r];
    while (head < queue.size() && st.ready[queue[head]]) {
      const uint32_t i = queue[head++];
      const size_t k = ps.received++;
      if (k < ps.arrivals.size()) {
        push(r, i, later(st.at[i], ps.arrivals[k]));
      } else {
        ps.waiting.resize(k + 1);
        ps.waiting[k] = {i, st.at[i]};
      }
    }
  }

  void complete(int r, uint32_t i) {
    ++completed_;
    RankState& st = ranks_[r];
    const Lin done = st.at[i];
    for (uint32_t k = st.depStart[i]; k < st.depStart[i + 1]; ++k) {
      const uint32_t d = st.dependents[k];
      st.at[d] = later(st.at[d], done);
      if (--st.remaining[d] == 0) dispatch(r, d);
    }
  }

  const std::vector<Schedule>& s_;
  const LinkTable& links_;
  const SimCosts& costs_;
  int n_;
  std::vector<RankState> ranks_;
  std::vector<PairState> pairs_;
  std::vector<Lin> pairFree_;  // per (sender, receiver): when its last message started
  std::vector<PortTimeline> ports_;
  double now_ = 0;  // the time of the event being processed
  std::vector<double> busy_;
  std::vector<Lin> computeFree_;
  double codecFactor_;  // the codec's cache factor for this call
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  size_t total_ = 0;
  size_t completed_ = 0;
  size_t messages_ = 0;
  double wireBytes_ = 0;
};

}  // namespace

SimResult simulate(const std::vector<Schedule>& schedules, const LinkTable& links, const SimCosts& costs) {
  if (static_cast<int>(schedules.size()) != links.nranks()) {
    throwError(ternInternalError, "cost model: %zu schedules for %d ranks", schedules.size(), links.nranks());
  }
  return Simulation(schedules, links, costs).run();
}

}  // namespace tern::planner
