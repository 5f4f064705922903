// Failure handling of the shared-memory path with ranks as threads: a wait on a peer that never arrives ends with
// ternTimeout after TERN_TIMEOUT (config.timeoutMs) naming the rank and the wait, and ternCommAbort from another
// thread ends a rank's wait at once. (A peer process that dies is covered by tests/shm/kill_test.sh.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "rank_threads.hpp"
#include "tern/tern.h"

namespace tern {
namespace {

using testing::runOnRanks;
using testing::Wire;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Sanitizer builds run the library several times slower, and the communicator's one timeout covers its init as
// well as the wait under test: the deadline and its bounds grow together there, rather than the test being left out.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TERN_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TERN_TEST_SANITIZED 1
#endif
#ifdef TERN_TEST_SANITIZED
constexpr int kSlowdown = 10;
#else
constexpr int kSlowdown = 1;
#endif

TEST(ShmFailure, MissingPeerTimesOutNamingIt) {
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 400 * kSlowdown;
  for (size_t count : {size_t{16}, size_t{1} << 20}) {  // the small and the pipelined algorithm
    std::atomic<bool> done{false};
    runOnRanks(
        2, Wire::kTcp,
        [&](ternComm_t comm, int r) {
          if (r == 1) {
            // Stays alive (its connections open) but never joins, until rank 0 gave up.
            while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            return;
          }
          std::vector<float> buf(count, 1.0f);
          auto start = Clock::now();
          ternResult_t res = ternAllReduce(buf.data(), buf.data(), count, ternFloat32, ternSum, comm);
          double took = secondsSince(start);
          std::string msg = ternGetLastError(comm);
          done.store(true);
          EXPECT_EQ(res, ternTimeout) << msg;
          EXPECT_GE(took, 0.35 * kSlowdown);
          EXPECT_LT(took, 2.0 * kSlowdown);
          EXPECT_NE(msg.find("rank 0"), std::string::npos) << msg;
          EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
          EXPECT_NE(msg.find("allreduce"), std::string::npos) << msg;
        },
        &config);
  }
}

// ternCommAbort frees the communicator, so this test manages its ranks itself instead of runOnRanks (which
// destroys every communicator at the end).
TEST(ShmFailure, AbortFromAnotherThreadEndsTheWait) {
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 60000;
  ternUniqueId id;
  ASSERT_EQ(ternGetUniqueId(&id), ternSuccess);
  std::atomic<bool> done{false};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      ternComm_t comm = nullptr;
      ASSERT_EQ(ternCommInitRankConfig(&comm, 2, id, r, &config), ternSuccess);
      if (r == 1) {
        while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ternCommDestroy(comm);
        return;
      }
      std::thread aborter([comm] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ternCommAbort(comm);
      });
      std::vector<float> buf(1 << 20, 1.0f);
      auto start = Clock::now();
      ternResult_t res = ternAllReduce(buf.data(), buf.data(), buf.size(), ternFloat32, ternSum, comm);
      double took = secondsSince(start);
      aborter.join();
      done.store(true);
      EXPECT_NE(res, ternSuccess);
      EXPECT_LT(took, 1.5);
    });
  }
  for (auto& t : ranks) t.join();
}

}  // namespace
}  // namespace tern
