// Abort and destroy from another thread while calls are inside: no memory a call uses is freed under it, destroy
// keeps to a deadline, and a destroyed handle is refused. They matter most in sanitizer builds (ctest -R
// AbortSafety in a -fsanitize=thread and a -fsanitize=address build); in a normal build they check the results and
// that nothing hangs.
//
// TERN_ABORT_STRESS_LOOPS sets how many collective-vs-abort rounds the stress test runs (default 100; the sanitizer
// runs use 1000), TERN_ABORT_STRESS_WIRE=tcp|inproc the transport of every round.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_id.hpp"
#include "core/communicator.hpp"
#include "rank_threads.hpp"
#include "tern/tern.h"
#include "tern/tern_ext.h"

namespace tern {
namespace {

using testing::Wire;
using testing::wireName;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// n communicators of one group, made collectively on n threads.
std::vector<ternComm_t> makeComms(int n, Wire wire, int timeoutMs) {
  ternUniqueId id;
  if (wire == Wire::kInproc) {
    id = makeInprocUniqueId().pack();
  } else {
    EXPECT_EQ(ternGetUniqueId(&id), ternSuccess) << ternGetLastError(nullptr);
  }
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  std::vector<ternComm_t> comms(n, nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ternResult_t res = ternCommInitRankConfig(&comms[r], n, id, r, &config);
      EXPECT_EQ(res, ternSuccess) << "rank " << r << ": " << ternGetLastError(nullptr);
    });
  }
  for (auto& t : threads) t.join();
  return comms;
}

// Holds every operation of the chosen rank inside the communicator (Communicator::execute) until released.
class CallHold {
 public:
  explicit CallHold(int rank) {
    heldRank_ = rank;
    released_ = false;
    entered_ = false;
    callHookForTesting.store(&CallHold::hook);
  }
  ~CallHold() {
    release();
    callHookForTesting.store(nullptr);
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  bool waitEntered(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, limit, [] { return entered_; });
  }

 private:
  static void hook(int rank) {
    if (rank != heldRank_) return;
    std::unique_lock<std::mutex> lock(mutex_);
    entered_ = true;
    changed_.notify_all();
    changed_.wait(lock, [] { return released_; });
  }
  static inline std::mutex mutex_;
  static inline std::condition_variable changed_;
  static inline int heldRank_ = -1;
  static inline bool released_ = false;
  static inline bool entered_ = false;
};

// TERN_ABORT_STRESS_WIRE=tcp or inproc: every round on that transport (default: every tenth round over TCP).
Wire stressWire(int loop) {
  const char* v = std::getenv("TERN_ABORT_STRESS_WIRE");
  if (v != nullptr && std::string(v) == "tcp") return Wire::kTcp;
  if (v != nullptr && std::string(v) == "inproc") return Wire::kInproc;
  return loop % 10 == 9 ? Wire::kTcp : Wire::kInproc;
}

int stressLoops() {
  const char* v = std::getenv("TERN_ABORT_STRESS_LOOPS");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : 100;
}

// One rank's side of a round: the same sequence of collectives on every rank until one fails (the abort), each
// successful result checked: rank r contributes r + 1 + i, so sums and gathers have known values.
std::atomic<long> completedCalls{0};  // how many calls of the stress rounds succeeded (were racing the abort)

void collectivesUntilFailure(ternComm_t comm, int rank, int n, bool destroyAtEnd) {
  constexpr size_t kCount = 1024;
  std::vector<int32_t> in(kCount), out(kCount * n);
  for (int i = 0;; ++i) {
    const int32_t mine = rank + 1 + i;
    std::fill(in.begin(), in.end(), mine);
    const int32_t sum = n * (n + 1) / 2 + n * i;
    ternResult_t r = ternSuccess;
    switch (i % 5) {
      case 0:
        r = ternAllReduce(in.data(), out.data(), kCount, ternInt32, ternSum, comm);
        if (r == ternSuccess) {
          ASSERT_EQ(out[kCount - 1], sum) << "allreduce " << i;
        }
        break;
      case 1:
        r = ternAllGather(in.data(), out.data(), kCount, ternInt32, comm);
        if (r == ternSuccess) {
          ASSERT_EQ(out[kCount * (n - 1)], n + i) << "allgather " << i;
        }
        break;
      case 2:
        r = ternBroadcast(in.data(), out.data(), kCount, ternInt32, i % n, comm);
        if (r == ternSuccess) {
          ASSERT_EQ(out[0], i % n + 1 + i) << "broadcast " << i;
        }
        break;
      case 3: {
        std::vector<int32_t> big(kCount * n, mine);
        r = ternReduceScatter(big.data(), out.data(), kCount, ternInt32, ternSum, comm);
        if (r == ternSuccess) {
          ASSERT_EQ(out[0], sum) << "reducescatter " << i;
        }
        break;
      }
      default: {
        // Two asynchronous calls: they run on the communicator's worker thread when abort comes.
        std::vector<int32_t> out2(kCount);
        ternRequest_t a = nullptr, b = nullptr;
        r = ternAllReduceAsync(in.data(), out.data(), kCount, ternInt32, ternSum, comm, &a);
        ternResult_t r2 = ternAllReduceAsync(in.data(), out2.data(), kCount, ternInt32, ternSum, comm, &b);
        if (a != nullptr) r = ternWait(a) != ternSuccess ? ternRemoteError : r;
        if (b != nullptr) r2 = ternWait(b) != ternSuccess ? ternRemoteError : r2;
        if (r == ternSuccess && r2 == ternSuccess) {
          ASSERT_EQ(out[0], sum);
          ASSERT_EQ(out2[kCount - 1], sum);
        }
        if (r == ternSuccess) r = r2;
        break;
      }
    }
    if (r != ternSuccess) break;
    completedCalls.fetch_add(1, std::memory_order_relaxed);
  }
  if (destroyAtEnd) {
    EXPECT_EQ(ternCommDestroy(comm), ternSuccess);
  }
}

TEST(AbortSafety, CollectivesRacingAnAbortFromAnotherThread) {
  const int loops = stressLoops();
  std::mt19937 rng(17);
  const auto start = Clock::now();
  for (int loop = 0; loop < loops; ++loop) {
    const Wire wire = stressWire(loop);
    const int n = 2 + loop % 3;
    // A safety net only: the abort reaches every rank through the transport long before this.
    std::vector<ternComm_t> comms = makeComms(n, wire, 10000);
    for (ternComm_t c : comms) ASSERT_NE(c, nullptr);
    const int target = static_cast<int>(rng() % n);
    const auto delay = std::chrono::microseconds(rng() % 3000);
    std::vector<std::thread> ranks;
    for (int r = 0; r < n; ++r) {
      ranks.emplace_back([&, r] { collectivesUntilFailure(comms[r], r, n, /*destroyAtEnd=*/r != target); });
    }
    std::thread aborter([&] {
      std::this_thread::sleep_for(delay);
      EXPECT_EQ(ternCommAbort(comms[target]), ternSuccess) << ternGetLastError(nullptr);
    });
    aborter.join();
    for (auto& t : ranks) t.join();
    if (::testing::Test::HasFailure()) {
      FAIL() << "round " << loop << " (" << wireName(wire) << ", " << n << " ranks)";
    }
  }
  std::printf("%d rounds in %.1f s, %ld calls completed before the aborts\n", loops, secondsSince(start),
              completedCalls.load());
  EXPECT_GT(completedCalls.load(), loops) << "the aborts came before the collectives: nothing raced";
}

// A call that does not notice the abort within abort's wait (held inside here by a test hook) keeps using the
// communicator after ternCommAbort returned: it must still be there (ASan: no use after free).
TEST(AbortSafety, ACallHeldPastTheAbortWaitStillHasItsCommunicator) {
  for (Wire wire : {Wire::kInproc, Wire::kTcp}) {
    SCOPED_TRACE(wireName(wire));
    constexpr int kTimeoutMs = 300;  // abort waits this long (at most 5 s) for calls to leave
    std::vector<ternComm_t> comms = makeComms(2, wire, kTimeoutMs);
    ASSERT_NE(comms[0], nullptr);
    ASSERT_NE(comms[1], nullptr);
    CallHold hold(/*rank=*/0);
    std::atomic<bool> returned{false};
    ternResult_t result = ternSuccess;
    std::string error;
    // Rank 1 never calls: rank 0's allreduce would wait for it, and is held before it even gets there.
    std::thread caller([&] {
      float x[256] = {};
      result = ternAllReduce(x, x, 256, ternFloat32, ternSum, comms[0]);
      error = ternGetLastError(nullptr);
      returned = true;
    });
    ASSERT_TRUE(hold.waitEntered(std::chrono::seconds(10)));
    const auto abortAt = Clock::now();
    EXPECT_EQ(ternCommAbort(comms[0]), ternSuccess) << ternGetLastError(nullptr);
    const double abortSeconds = secondsSince(abortAt);
    EXPECT_FALSE(returned.load()) << "the held call left before abort returned: the test proves nothing";
    EXPECT_GE(abortSeconds, kTimeoutMs / 1000.0 * 0.9);
    EXPECT_LT(abortSeconds, 3.0);
    // The call goes on into the transport of the aborted communicator, and fails there.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    hold.release();
    caller.join();
    EXPECT_NE(result, ternSuccess);
    EXPECT_NE(error.find("abort"), std::string::npos) << error;
    // The handle is gone for later calls.
    float y = 0;
    EXPECT_EQ(ternAllReduce(&y, &y, 1, ternFloat32, ternSum, comms[0]), ternInvalidArgument);
    EXPECT_EQ(ternCommDestroy(comms[1]), ternSuccess);
  }
}

// An operation stuck on the worker thread past the destroy deadline: destroy returns within its deadline and
// leaks the communicator instead of freeing it under the operation, which then finishes on intact memory.
TEST(AbortSafety, DestroyKeepsItsDeadlineWhenAnOperationIsStuck) {
  constexpr int kTimeoutMs = 200;
  std::vector<ternComm_t> comms = makeComms(2, Wire::kInproc, kTimeoutMs);
  ASSERT_NE(comms[0], nullptr);
  ASSERT_NE(comms[1], nullptr);
  CallHold hold(/*rank=*/0);
  float x[64] = {};
  ternRequest_t request = nullptr;
  ASSERT_EQ(ternAllReduceAsync(x, x, 64, ternFloat32, ternSum, comms[0], &request), ternSuccess);
  ASSERT_TRUE(hold.waitEntered(std::chrono::seconds(10)));
  const auto start = Clock::now();
  EXPECT_EQ(ternCommDestroy(comms[0]), ternSuccess);
  const double destroySeconds = secondsSince(start);
  // Deadline: one timeout for the operation, then an abort and a grace of at most one timeout more.
  EXPECT_LT(destroySeconds, 3 * kTimeoutMs / 1000.0 + 1.0);
  EXPECT_GE(destroySeconds, 2 * kTimeoutMs / 1000.0 * 0.9);
  hold.release();
  EXPECT_NE(ternWait(request), ternSuccess);  // aborted by the destroy
  EXPECT_EQ(ternCommDestroy(comms[1]), ternSuccess);
}

TEST(AbortSafety, ADestroyedCommunicatorIsRefusedWithAMessage) {
  for (bool abort : {false, true}) {
    std::vector<ternComm_t> comms = makeComms(2, Wire::kInproc, 2000);
    ASSERT_NE(comms[0], nullptr);
    ASSERT_NE(comms[1], nullptr);
    ternComm_t gone = comms[0];
    ASSERT_EQ(abort ? ternCommAbort(gone) : ternCommDestroy(gone), ternSuccess);
    float x = 1;
    int count = 0;
    EXPECT_EQ(ternAllReduce(&x, &x, 1, ternFloat32, ternSum, gone), ternInvalidArgument);
    EXPECT_NE(std::strstr(ternGetLastError(nullptr), "destroyed"), nullptr) << ternGetLastError(nullptr);
    EXPECT_NE(std::strstr(ternGetLastError(nullptr), "ternAllReduce"), nullptr) << ternGetLastError(nullptr);
    EXPECT_EQ(ternCommCount(gone, &count), ternInvalidArgument);
    ternRequest_t request = nullptr;
    EXPECT_EQ(ternBarrierAsync(gone, &request), ternInvalidArgument);
    EXPECT_EQ(request, nullptr);
    EXPECT_STREQ(ternCommTransportName(gone), "");
    // Destroying or aborting it twice is refused too, not a double free.
    EXPECT_EQ(ternCommDestroy(gone), ternInvalidArgument);
    EXPECT_EQ(ternCommAbort(gone), ternInvalidArgument);
    EXPECT_EQ(ternCommDestroy(comms[1]), ternSuccess);
  }
  // A group recorded before the destroy fails at its end instead of running on a freed communicator.
  std::vector<ternComm_t> one = makeComms(1, Wire::kInproc, 2000);
  ASSERT_NE(one[0], nullptr);
  float y = 1;
  ASSERT_EQ(ternGroupStart(), ternSuccess);
  ASSERT_EQ(ternAllReduce(&y, &y, 1, ternFloat32, ternSum, one[0]), ternSuccess);
  ASSERT_EQ(ternCommDestroy(one[0]), ternSuccess);
  EXPECT_EQ(ternGroupEnd(), ternInvalidArgument);
  EXPECT_NE(std::strstr(ternGetLastError(nullptr), "destroyed"), nullptr) << ternGetLastError(nullptr);
}

}  // namespace
}  // namespace tern
