// Waiting for a peer's flag to reach a value: spin briefly, then sleep on the flag's futex, checking the deadline,
// aborts and the peer's liveness every few milliseconds of sleep. Never spins unboundedly and never hangs.
//
// Why spin at all: on this class of machine (virtual CPUs) a futex sleep is cheap, but the wake-up is not: an idle
// vCPU halts, and waking it costs the host a VM exit and entry (transport/spin_policy.hpp). But spinning steals the
// CPU from the very peer we wait for when both run on one CPU, which happens whenever ranks outnumber CPUs and also,
// without CPU binding, whenever the scheduler keeps two ranks that hand work back and forth on one CPU (futex wake-ups
// pull the wakee to the waker's CPU). So:
//   - every rank publishes the CPU it posted from; a waiter whose peer last posted from the waiter's own CPU does not
//     spin at all, it yields (which runs the peer at once if it is runnable there), then sleeps;
//   - otherwise it spins up to an adaptive budget: halved when a spin ends without the flag (the peer was preempted
//     or slow), doubled when it succeeds, between SpinPolicy's floor and ceiling;
//   - when the host's ranks outnumber its CPUs, it then polls with sched_yield() for SpinPolicy::yieldPollNs before
//     it sleeps (the awaited rank is most likely queued behind another on some CPU, often ours).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/socket.hpp"
#include "transport/shm/futex.hpp"
#include "transport/shm/watchdog.hpp"
#include "transport/spin_policy.hpp"

namespace tern::shm {

// The CPU this thread runs on now (cheap: glibc reads it from the restartable-sequences area).
int currentCpu();

// Everything a wait needs that is the same for a whole call.
struct WaitScope {
  Watchdog* dog = nullptr;
  SpinBudget* spin = nullptr;
  Clock::time_point deadline;
  const std::atomic<bool>* abortFlag = nullptr;
};

// What a wait waits on: a flag word of a peer, with the peer's waiter count and the CPU it last posted from.
struct PeerFlag {
  const std::atomic<uint32_t>& word;
  std::atomic<uint32_t>& waiters;
  const std::atomic<int32_t>& cpu;
  int peer;
};

void waitFlagSlow(const WaitScope& scope, const PeerFlag& flag, uint32_t target, const Describe& what);

// Returns once the flag has reached target.
template <typename F>
inline void waitFlag(const WaitScope& scope, const PeerFlag& flag, uint32_t target, const F& what) {
  if (reached(flag.word.load(std::memory_order_acquire), target)) return;
  waitFlagSlow(scope, flag, target, Describe(what));
}

}  // namespace tern::shm
