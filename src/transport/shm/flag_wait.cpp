#include "transport/shm/flag_wait.hpp"

#include <immintrin.h>
#include <sched.h>

namespace tern::shm {

namespace {

// Longest single futex sleep, and the interval between liveness probes of the awaited peer: a dead peer is noticed
// within this time (the probe is two recv(MSG_PEEK) calls, so it is cheap enough to run this often).
constexpr int kSleepSliceUs = 10000;
constexpr auto kProbeInterval = std::chrono::milliseconds(10);

}  // namespace

void waitFlagSlow(const WaitScope& scope, const std::atomic<uint32_t>& word, uint32_t target,
                  std::atomic<uint32_t>& waiters, int peer, const Describe& what) {
  if (scope.spin->spinNs > 0) {
    auto end = Clock::now() + std::chrono::nanoseconds(scope.spin->spinNs);
    do {
      for (int i = 0; i < 16; ++i) {
        _mm_pause();
        if (reached(word.load(std::memory_order_acquire), target)) return;
      }
    } while (Clock::now() < end);
  }
  for (int i = 0; i < scope.spin->yields; ++i) {
    sched_yield();
    if (reached(word.load(std::memory_order_acquire), target)) return;
  }
  auto lastProbe = Clock::now();
  for (;;) {
    waiters.fetch_add(1, std::memory_order_seq_cst);
    uint32_t v = word.load(std::memory_order_seq_cst);
    if (!reached(v, target)) futexWait(&word, v, kSleepSliceUs);
    waiters.fetch_sub(1, std::memory_order_release);
    if (reached(word.load(std::memory_order_acquire), target)) return;
    scope.dog->checkAbortAndDeadline(peer, scope.deadline, scope.abortFlag, what);
    auto now = Clock::now();
    if (now - lastProbe >= kProbeInterval) {
      lastProbe = now;
      if (scope.dog->peerGone(peer)) {
        if (reached(word.load(std::memory_order_acquire), target)) return;
        scope.dog->throwPeerGone(peer, what);
      }
    }
  }
}

}  // namespace tern::shm
