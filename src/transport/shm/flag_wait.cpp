#include "transport/shm/flag_wait.hpp"

#include <sched.h>

namespace tern::shm {

namespace {

// Longest single futex sleep, and the interval between liveness probes of the awaited peer: a dead peer is noticed
// within this time (the probe is two recv(MSG_PEEK) calls, so it is cheap enough to run this often).
constexpr int kSleepSliceUs = 10000;
constexpr auto kProbeInterval = std::chrono::milliseconds(10);

}  // namespace

int currentCpu() { return sched_getcpu(); }

void waitFlagSlow(const WaitScope& scope, const PeerFlag& flag, uint32_t target, const Describe& what) {
  const std::atomic<uint32_t>& word = flag.word;
  const bool sharesCpu = flag.cpu.load(std::memory_order_relaxed) == currentCpu();
  SpinBudget& budget = *scope.spin;
  // Set when a spin ran out: the rest of the wait then tells the budget how long spinning would have had to last.
  Clock::time_point spunFrom{};
  if (!sharesCpu && budget.ns() > 0) {
    spunFrom = Clock::now();
    auto end = spunFrom + std::chrono::nanoseconds(budget.ns());
    do {
      for (int i = 0; i < 16; ++i) {
        cpuRelax();
        if (reached(word.load(std::memory_order_acquire), target)) {
          budget.succeeded();
          return;
        }
      }
    } while (Clock::now() < end);
  }
  // Set when a yield poll ran out: the rest of the wait then tells the budget how long it would have had to last.
  Clock::time_point yieldedFrom{};
  const auto arrived = [&] {
    if (spunFrom != Clock::time_point{}) {
      budget.sleptThrough(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - spunFrom).count());
    }
    if (yieldedFrom != Clock::time_point{}) {
      budget.yieldSleptThrough(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - yieldedFrom).count());
    }
  };
  if (budget.yieldNs() > 0) {
    const Clock::time_point from = Clock::now();
    const auto end = from + std::chrono::nanoseconds(budget.yieldNs());
    do {
      sched_yield();
      if (reached(word.load(std::memory_order_acquire), target)) {
        arrived();
        budget.yieldSucceeded();
        return;
      }
    } while (Clock::now() < end);
    yieldedFrom = from;
  } else if (sharesCpu) {
    for (int i = 0; i < budget.policy().yields; ++i) {
      sched_yield();
      if (reached(word.load(std::memory_order_acquire), target)) {
        arrived();
        return;
      }
    }
  }
  std::atomic<uint32_t>& waiters = flag.waiters;
  const int peer = flag.peer;
  auto lastProbe = Clock::now();
  for (;;) {
    waiters.fetch_add(1, std::memory_order_seq_cst);
    uint32_t v = word.load(std::memory_order_seq_cst);
    if (!reached(v, target)) futexWait(&word, v, kSleepSliceUs);
    waiters.fetch_sub(1, std::memory_order_release);
    if (reached(word.load(std::memory_order_acquire), target)) {
      arrived();
      return;
    }
    scope.dog->checkAbortAndDeadline(peer, scope.deadline, scope.abortFlag, what);
    auto now = Clock::now();
    if (now - lastProbe >= kProbeInterval) {
      lastProbe = now;
      if (scope.dog->peerGone(peer)) {
        if (reached(word.load(std::memory_order_acquire), target)) {
          arrived();
          return;
        }
        scope.dog->throwPeerGone(peer, what);
      }
    }
  }
}

}  // namespace tern::shm
