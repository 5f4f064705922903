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
#include <array>
#include <cstdint>
#include <vector>

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

// The adaptive budgets: one per communicator side (collectives, transport), used by one thread at a time.
class SpinBudget {
 public:
  explicit SpinBudget(const SpinPolicy& p) : policy_(p), budgetNs_(p.maxSpinNs), yieldNs_(p.yieldPollNs) {}
  const SpinPolicy& policy() const { return policy_; }
  int64_t ns() const { return budgetNs_; }
  // The yield poll adapts as the spin does. A wait it covered doubles it back towards the policy's; one that slept
  // on past the policy's yield poll halves it (down to a sixteenth): such waits are for a peer that is not runnable
  // (it waits on a slow link, or computes), and yielding through them costs a pair of context switches per round,
  // taken from whoever computes on our CPU. A wait that ended within the policy's yield poll after sleeping sets it
  // to cover that wait.
  int64_t yieldNs() const { return yieldNs_; }
  void yieldSucceeded() { yieldNs_ = std::min(policy_.yieldPollNs, yieldNs_ * 2); }
  void yieldFailed() { yieldNs_ = std::max(policy_.yieldPollNs / 16, yieldNs_ / 2); }
  void yieldSleptThrough(int64_t waitedNs) {
    if (waitedNs > policy_.yieldPollNs) {
      yieldFailed();
    } else {
      yieldNs_ = std::clamp(waitedNs + waitedNs / 2, policy_.yieldPollNs / 16, policy_.yieldPollNs);
    }
  }
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
  int64_t yieldNs_;
};

// ownCpus: whether the ranks that share this machine's CPUs each have one of their own (ranksOwnCpus below).
SpinPolicy spinPolicyFor(bool ownCpus);

// Whether localRanks ranks of this host each have a CPU of their own, judged from this process alone: where they
// outnumber the CPUs, ranks that exchange data often share a core and its cache. A process bound to one CPU counts
// the machine's online CPUs (a launcher that binds one rank per CPU put its peers on the others); where the ranks
// can tell each other their masks, the overload below knows instead.
bool ranksOwnCpus(int localRanks);

// The CPUs a process may run on, one bit per CPU number (sched_getaffinity's mask); all zero where unreadable.
inline constexpr int kCpuMaskWords = 16;  // CPU_SETSIZE (1024) bits
using CpuMask = std::array<uint64_t, kCpuMaskWords>;
CpuMask ownCpuMask();

// Whether the host's ranks, one mask each (every rank's, its own included), each have a CPU of their own: they are
// no more than the CPUs in the union of their masks. The same masks give every rank the same answer. Two ranks
// bound to CPUs 0 and 1 own them; two ranks of a container confined to CPU 0 share it. A mask that could not be
// read counts as the machine's online CPUs.
bool ranksOwnCpus(const std::vector<CpuMask>& masks);

}  // namespace tern
