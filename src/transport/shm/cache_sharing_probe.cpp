#include "transport/shm/cache_sharing_probe.hpp"

#include <algorithm>

#include "base/env.hpp"
#include "transport/shm/futex.hpp"

namespace tern::shm {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kBatches = 8;
constexpr uint32_t kBatchRounds = 32;
constexpr uint32_t kLastValue = kBatches * kBatchRounds;  // values 1 .. kLastValue after the handshake (0)

// Spins until line holds want; false once the deadline passes (checked every few thousand polls: a clock read per
// poll would be most of a round trip).
bool spinFor(const std::atomic<uint32_t>& line, uint32_t want, Clock::time_point deadline) {
  for (uint32_t polls = 1;; ++polls) {
    if (line.load(std::memory_order_acquire) == want) return true;
    cpuRelax();
    if ((polls & 4095) == 0 && Clock::now() > deadline) return false;
  }
}

}  // namespace

double bounceWithPeer(std::atomic<uint32_t>& peerLine, std::atomic<uint32_t>& ownLine, uint32_t tag,
                      Clock::time_point deadline) {
  // The handshake: the peer may reach the probe later than the leader.
  peerLine.store(tag, std::memory_order_release);
  if (!spinFor(ownLine, tag, deadline)) return -1;
  double best = -1;
  uint32_t value = 0;
  for (uint32_t b = 0; b < kBatches; ++b) {
    const Clock::time_point start = Clock::now();
    for (uint32_t i = 0; i < kBatchRounds; ++i) {
      ++value;
      peerLine.store(tag | value, std::memory_order_release);
      if (!spinFor(ownLine, tag | value, deadline)) return -1;
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kBatchRounds;
    best = best < 0 ? ns : std::min(best, ns);
  }
  return best;
}

bool echoToLeader(std::atomic<uint32_t>& ownLine, std::atomic<uint32_t>& leaderLine, uint32_t tag,
                  Clock::time_point deadline) {
  for (uint32_t value = 0; value <= kLastValue; ++value) {
    if (!spinFor(ownLine, tag | value, deadline)) return false;
    leaderLine.store(tag | value, std::memory_order_release);
  }
  return true;
}

CacheSharing cacheSharingOf(double roundTripNs) {
  if (roundTripNs < 0) return CacheSharing::kUnknown;
  return roundTripNs < kSharedCacheRoundTripNs ? CacheSharing::kShared : CacheSharing::kSeparate;
}

CacheSharing cacheSharingFromEnvironment() {
  const long v = envInt("SHM_SHARED_CACHE", -1);
  if (v < 0) return CacheSharing::kUnknown;
  return v != 0 ? CacheSharing::kShared : CacheSharing::kSeparate;
}

}  // namespace tern::shm
