// Discrete-event simulation of one collective: the schedules of all ranks, run against a LinkTable, under the
// executor's rules:
//  - a step starts when its dependencies are done; sends to one peer are posted in step order, and so are receives
//    from one peer (the executor's FIFO queues), and the k-th send from A to B matches the k-th receive on B from A;
//  - a transfer starts at the earliest time after its send is posted when the ports it needs (link_table.hpp) are
//    all free for its whole duration (a gap between other reservations will do; messages of one pair still leave
//    in order), holds them for bytes x beta, and arrives alpha later; the send is done when the bytes are out, the
//    receive when they arrived and it was posted (sends are eager: TCP and shm FIFOs buffer, so a sender does not
//    wait for the receive);
//  - local steps of a rank run one at a time on that rank (the executor runs them on the calling thread): reduce
//    bytes x gamma, copy/finalize/cast bytes x copy-beta, encode/decode fp32-bytes x the codec's cost.
// The result is the time the last rank finishes, with the critical path's breakdown and how busy every port was.
// Cost: O(steps log steps) over all ranks, plus the search of each port's reservations still ahead of the
// present (a few, except where a rank posts many sends at once).
#pragma once

#include <string>
#include <vector>

#include "exec/schedule.hpp"
#include "planner/breakdown.hpp"
#include "planner/cost_params.hpp"
#include "planner/link_table.hpp"

namespace tern::planner {

struct SimCosts {
  CodecSpeed codec;       // for kEncode / kDecode steps
  double workingSet = 0;  // per-rank bytes the call touches, for the cache figures of pairs and codec
};

struct SimResult {
  double seconds = 0;
  Breakdown critical;            // the finish time's terms (critical.total() == seconds up to rounding)
  std::vector<double> portBusy;  // seconds each port was held
  int busiestPort = -1;          // -1 when nothing was sent
  size_t messages = 0;
  double wireBytes = 0;  // bytes sent, all ranks together
  std::string error;     // non-empty when the schedules cannot finish (a builder bug): what is stuck
};

// schedules[r] is rank r's schedule; links.nranks() must equal schedules.size().
SimResult simulate(const std::vector<Schedule>& schedules, const LinkTable& links, const SimCosts& costs = {});

}  // namespace tern::planner
