// Waiting for a peer's flag to reach a value: spin briefly, then sleep on the flag's futex, checking the deadline,
// aborts and the peer's liveness every few milliseconds of sleep. Never spins unboundedly and never hangs.
//
// Why spin at all: on this class of machine (virtual CPUs) a futex sleep is cheap, but the wake-up is not: an idle
// vCPU halts, and waking it costs the host a VM entry. Measured with a barrier ping-pong between processes on a
// 2-vCPU VM (see the SpinPolicy comment in spin_policy.cpp): ~195 us per barrier with pure futex sleeps vs ~1.1 us
// when waiters spin 20 us first. But spinning steals the CPU from the very peer we wait for when ranks outnumber
// CPUs, so the budget depends on oversubscription.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/socket.hpp"
#include "transport/shm/futex.hpp"
#include "transport/shm/watchdog.hpp"

namespace tern::shm {

struct SpinPolicy {
  int64_t spinNs = 0;  // busy-poll budget before sleeping
  int yields = 0;      // sched_yield() rounds after spinning (hands the CPU to a runnable peer on this CPU)
};

// Everything a wait needs that is the same for a whole call.
struct WaitScope {
  Watchdog* dog = nullptr;
  const SpinPolicy* spin = nullptr;
  Clock::time_point deadline;
  const std::atomic<bool>* abortFlag = nullptr;
};

void waitFlagSlow(const WaitScope& scope, const std::atomic<uint32_t>& word, uint32_t target,
                  std::atomic<uint32_t>& waiters, int peer, const Describe& what);

// Returns once word (owned by peer, whose waiter count is waiters) has reached target.
template <typename F>
inline void waitFlag(const WaitScope& scope, const std::atomic<uint32_t>& word, uint32_t target,
                     std::atomic<uint32_t>& waiters, int peer, const F& what) {
  if (reached(word.load(std::memory_order_acquire), target)) return;
  waitFlagSlow(scope, word, target, waiters, peer, Describe(what));
}

}  // namespace tern::shm
