// How long a rank's waits on its peers busy-poll before they sleep, chosen once per communicator from the number of
// ranks on this host and the CPUs this process may run on. The shared-memory flag waits (shm/flag_wait.hpp) and the
// TCP transport's progress (tcp/tcp_transport.cpp) both use it.
//
// Why spin at all: on virtual CPUs a sleep is cheap but the wake-up is not: an idle vCPU halts, and waking it costs
// the host a VM exit and entry, far more than a same-host message takes to arrive. Spinning only ever happens in the
// rank's own waiting thread, for a bounded and adaptive time between the policy's floor and ceiling: doubled when a
// spin succeeds; when it ends without what it waited for, the wait sleeps, and the next budget follows how long the
// whole wait took: long enough to cover it when it ended within the ceiling (a wait that is only a little longer
// than the budget, such as a peer still copying a large block, would otherwise pay the wake-up on every call), halved
// when it did not (the peer was preempted, or computes).
#pragma once

#include <algorithm>
#include <cstdint>

namespace tern {

struct SpinPolicy {
  int64_t maxSpinNs = 0;  // ceiling of the adaptive busy-poll budget (0: never spin)
  int64_t minSpinNs = 0;  // floor it adapts down to, so that it can notice when spinning pays again
  int yields = 0;         // sched_yield() rounds before sleeping when the peer shares our CPU (shared memory only)
  // When this host's ranks outnumber its CPUs: after the spin, keep polling with sched_yield() for up to this long
  // before sleeping (0: sleep at once). The rank we wait for is then usually runnable but not running, often on our
  // own CPU; yielding hands it the CPU at once, where a futex sleep would add a wake-up to every synchronisation.
  int64_t yieldPollNs = 0;
};

// The adaptive budget: one per communicator side (collectives, transport), used by one thread at a time.
class SpinBudget {
 public:
  explicit SpinBudget(const SpinPolicy& p) : policy_(p), budgetNs_(p.maxSpinNs) {}
  const SpinPolicy& policy() const { return policy_; }
  int64_t ns() const { return budgetNs_; }
  void succeeded() { budgetNs_ = std::min(policy_.maxSpinNs, budgetNs_ * 2 + 1000); }
  void failed() { budgetNs_ = std::max(policy_.minSpinNs, budgetNs_ / 2); }
  // A spin that failed, after which the wait slept and ended `waitedNs` after it began (spin included).
  void sleptThrough(int64_t waitedNs) {
    if (waitedNs > policy_.maxSpinNs) {
      failed();
      return;
    }
    budgetNs_ = std::clamp(waitedNs + waitedNs / 2, policy_.minSpinNs, policy_.maxSpinNs);
  }

 private:
  SpinPolicy policy_;
  int64_t budgetNs_;
};

// localRanks: the ranks of this communicator on this host, this one included.
SpinPolicy chooseSpinPolicy(int localRanks);

// Whether localRanks ranks of this host each have a CPU of their own (the test chooseSpinPolicy makes): where they
// outnumber the CPUs, ranks that exchange data often share a core and its cache.
bool ranksOwnCpus(int localRanks);

}  // namespace tern
