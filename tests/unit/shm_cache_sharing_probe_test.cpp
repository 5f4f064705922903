// The cache sharing probe (src/transport/shm/cache_sharing_probe.hpp): two threads bounce a counter through two
// cache lines as the setup's leader and peer do, the answer follows the round trip, and a peer that never answers
// costs the leader no more than the deadline. The setup path itself (every rank of a host agreeing on the leader's
// answer) runs in every shared-memory test between processes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "transport/shm/cache_sharing_probe.hpp"

namespace tern::shm {
namespace {

using Clock = std::chrono::steady_clock;

struct alignas(64) Line {
  std::atomic<uint32_t> value{0};
};

TEST(CacheSharingProbe, LeaderAndPeerBounceEveryValueAndTheLeaderGetsARoundTrip) {
  Line leaderLine, peerLine;
  const uint32_t tag = uint32_t{3} << 16;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
  bool echoed = false;
  std::thread peer([&] { echoed = echoToLeader(peerLine.value, leaderLine.value, tag, deadline); });
  const double ns = bounceWithPeer(peerLine.value, leaderLine.value, tag, deadline);
  peer.join();
  EXPECT_TRUE(echoed);
  // Positive and finite whatever the machine (threads on one CPU take a time slice per round trip).
  EXPECT_GT(ns, 0);
  EXPECT_LT(ns, 1e9);
  EXPECT_NE(cacheSharingOf(ns), CacheSharing::kUnknown);
}

TEST(CacheSharingProbe, APeerThatNeverAnswersLeavesItUnknownByTheDeadline) {
  Line leaderLine, peerLine;
  const auto start = Clock::now();
  const double ns =
      bounceWithPeer(peerLine.value, leaderLine.value, uint32_t{1} << 16, start + std::chrono::milliseconds(30));
  EXPECT_LT(ns, 0);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(cacheSharingOf(ns), CacheSharing::kUnknown);
  // And a peer whose leader never comes gives up likewise.
  EXPECT_FALSE(
      echoToLeader(peerLine.value, leaderLine.value, uint32_t{2} << 16, Clock::now() + std::chrono::milliseconds(30)));
}

TEST(CacheSharingProbe, TheThresholdSplitsSharedFromSeparate) {
  EXPECT_EQ(cacheSharingOf(kSharedCacheRoundTripNs / 2), CacheSharing::kShared);
  EXPECT_EQ(cacheSharingOf(kSharedCacheRoundTripNs * 2), CacheSharing::kSeparate);
  EXPECT_EQ(cacheSharingOf(-1), CacheSharing::kUnknown);
}

}  // namespace
}  // namespace tern::shm
