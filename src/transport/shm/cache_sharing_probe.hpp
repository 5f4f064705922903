// Whether this host's ranks share a last-level cache, measured once at shared-memory setup by bouncing a cache line
// between them.
//
// Why: which shared-memory form of a large call pays depends on it. The staged forms copy every byte twice, into the
// segment and out of it; where the ranks' CPUs share a cache the second copy reads lines the first left there, and
// staging beats a kernel copy (CMA) that pins every page first. Where they share none (another core complex, another
// socket, or a VM whose vCPUs the host spreads out), every staged line crosses between caches twice, and one kernel
// copy wins several times over. Caches are shared or not whatever the topology reports inside a VM, so tern
// measures: a cache line's round trip between two CPUs that share a cache takes on the order of 100 ns, between two
// that do not several times that. The host's CMA learner starts its bands from the answer (cma_learner.hpp) and
// corrects a wrong one at its checks, so the probe decides only what a short run gets.
//
// How: the lowest local rank bounces a counter with every other local rank in turn through a line of each one's
// control block, and keeps the fastest of a few batches (a batch that a preemption hit is not the placement). Both
// sides spin, so it runs only where the host's ranks own their CPUs; every wait has a deadline, and a peer that does
// not answer in time leaves the answer unknown.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tern::shm {

// Round trips faster than this count as a shared cache.
inline constexpr double kSharedCacheRoundTripNs = 150;

enum class CacheSharing : uint8_t { kUnknown = 0, kShared = 1, kSeparate = 2 };

// The leader's side with one peer: `peerLine` lives in the peer's control block (it waits on it), `ownLine` in the
// leader's (the peer echoes into it). `tag` tells this pair's values from any other (non-zero in its upper 16 bits).
// Returns the fastest batch's mean round trip in ns, or a negative value when the peer did not keep up by deadline.
double bounceWithPeer(std::atomic<uint32_t>& peerLine, std::atomic<uint32_t>& ownLine, uint32_t tag,
                      std::chrono::steady_clock::time_point deadline);
// The peer's side: echoes the leader's values from ownLine into leaderLine until the last one. False when the leader
// did not finish by deadline.
bool echoToLeader(std::atomic<uint32_t>& ownLine, std::atomic<uint32_t>& leaderLine, uint32_t tag,
                  std::chrono::steady_clock::time_point deadline);

// What a round trip says.
CacheSharing cacheSharingOf(double roundTripNs);

// TERN_SHM_SHARED_CACHE: 1 or 0 replace the measurement (kShared / kSeparate), unset measures (kUnknown here).
CacheSharing cacheSharingFromEnvironment();

}  // namespace tern::shm
