// The stream-ordered calls (tern_cuda.h) through the staged device path (core/staged_device_calls.hpp), with host
// threads posing as CUDA streams and PROT_NONE ranges as device memory (host_streams.hpp): every collective's
// results, in and out of place; that calls return before their stream runs them; order with host calls; and that a
// failure, a timeout or an abort never leaves a stream waiting.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/host_streams.hpp"
#include "common/stream_calls.hpp"
#include "rank_threads.hpp"
#include "tern/tern.h"

namespace tern::testing {
namespace {

cudaStream_t asStream(HostStream& s) { return reinterpret_cast<cudaStream_t>(&s); }

// Exact in float32 for the sizes and rank counts here: small integers.
float valueOf(int rank, size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1)); }

class StagedDeviceCallsTest : public ::testing::Test {
 protected:
  void SetUp() override { setDeviceStreamsForTesting(&dev); }
  void TearDown() override { setDeviceStreamsForTesting(nullptr); }

  // A device buffer holding `values`.
  float* deviceCopy(const std::vector<float>& values) {
    auto* p = static_cast<float*>(dev.allocDevice(std::max<size_t>(1, values.size()) * sizeof(float)));
    dev.upload(p, values.data(), values.size() * sizeof(float));
    return p;
  }
  float* deviceBuffer(size_t count, float fill = -1.0f) { return deviceCopy(std::vector<float>(count, fill)); }
  std::vector<float> hostCopy(const float* p, size_t count) {
    std::vector<float> v(count);
    dev.download(v.data(), p, count * sizeof(float));
    return v;
  }
  std::vector<float> rankData(int rank, size_t count, size_t offset = 0) {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = valueOf(rank, offset + i);
    return v;
  }

  HostStreams dev;
};

void expectSuccess(ternResult_t r, const char* what) {
  EXPECT_EQ(r, ternSuccess) << what << ": " << ternGetLastError(nullptr);
}

TEST_F(StagedDeviceCallsTest, EveryCollectiveOnDeviceBuffersMatchesTheReference) {
  for (auto [n, wire] : {std::pair{1, Wire::kInproc}, std::pair{3, Wire::kInproc}, std::pair{2, Wire::kTcp}}) {
    SCOPED_TRACE(std::to_string(n) + " ranks over " + wireName(wire));
    runOnRanks(n, wire, [&](ternComm_t comm, int r) {
      HostStream stream;
      const cudaStream_t s = asStream(stream);
      const size_t un = static_cast<size_t>(n);
      // AllReduce, out of place and in place, at the odd sizes.
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, (size_t{1} << 20) + 3}) {
        float* in = deviceCopy(rankData(r, count));
        float* out = deviceBuffer(count);
        float* inPlace = deviceCopy(rankData(r, count));
        expectSuccess(ternAllReduceOnStream(in, out, count, ternFloat32, ternSum, comm, s), "allreduce");
        expectSuccess(ternAllReduceOnStream(inPlace, inPlace, count, ternFloat32, ternSum, comm, s), "allreduce");
        ASSERT_TRUE(stream.synchronize());
        std::vector<float> want(count, 0.0f);
        for (int q = 0; q < n; ++q) {
          for (size_t i = 0; i < count; ++i) want[i] += valueOf(q, i);
        }
        EXPECT_EQ(hostCopy(out, count), want) << "allreduce, count " << count;
        EXPECT_EQ(hostCopy(inPlace, count), want) << "in-place allreduce, count " << count;
        EXPECT_EQ(hostCopy(in, count), rankData(r, count)) << "allreduce changed its input";
      }
      const size_t count = 1023;
      // AllGather, out of place and in place (the rank's block inside the output).
      {
        float* in = deviceCopy(rankData(r, count));
        float* out = deviceBuffer(count * un);
        std::vector<float> place(count * un, -1.0f);
        std::memcpy(place.data() + count * r, rankData(r, count).data(), count * sizeof(float));
        float* inPlace = deviceCopy(place);
        expectSuccess(ternAllGatherOnStream(in, out, count, ternFloat32, comm, s), "allgather");
        expectSuccess(ternAllGatherOnStream(inPlace + count * r, inPlace, count, ternFloat32, comm, s), "allgather");
        ASSERT_TRUE(stream.synchronize());
        std::vector<float> want;
        for (int q = 0; q < n; ++q) {
          auto b = rankData(q, count);
          want.insert(want.end(), b.begin(), b.end());
        }
        EXPECT_EQ(hostCopy(out, count * un), want) << "allgather";
        EXPECT_EQ(hostCopy(inPlace, count * un), want) << "in-place allgather";
      }
      // ReduceScatter: rank q's input is rankData(q, count * n); this rank gets the sum of block r.
      {
        float* in = deviceCopy(rankData(r, count * un));
        float* out = deviceBuffer(count);
        expectSuccess(ternReduceScatterOnStream(in, out, count, ternFloat32, ternSum, comm, s), "reducescatter");
        ASSERT_TRUE(stream.synchronize());
        std::vector<float> want(count, 0.0f);
        for (int q = 0; q < n; ++q) {
          for (size_t i = 0; i < count; ++i) want[i] += valueOf(q, count * r + i);
        }
        EXPECT_EQ(hostCopy(out, count), want) << "reducescatter";
      }
      // Broadcast from the last rank (non-roots pass no send buffer) and Reduce to it (non-roots no receive buffer).
      {
        const int root = n - 1;
        float* in = r == root ? deviceCopy(rankData(r, count)) : nullptr;
        float* out = deviceBuffer(count);
        expectSuccess(ternBroadcastOnStream(in, out, count, ternFloat32, root, comm, s), "broadcast");
        float* mine = deviceCopy(rankData(r, count));
        float* sum = r == root ? deviceBuffer(count) : nullptr;
        expectSuccess(ternReduceOnStream(mine, sum, count, ternFloat32, ternMax, root, comm, s), "reduce");
        ASSERT_TRUE(stream.synchronize());
        EXPECT_EQ(hostCopy(out, count), rankData(root, count)) << "broadcast";
        if (r == root) {
          EXPECT_EQ(hostCopy(sum, count), rankData(root, count)) << "reduce max";
        }
      }
      // AlltoAll and AlltoAllv (rank r sends q + 1 elements to rank q).
      {
        float* in = deviceCopy(rankData(r, count * un));
        float* out = deviceBuffer(count * un);
        expectSuccess(ternAlltoAllOnStream(in, out, count, ternFloat32, comm, s), "alltoall");
        std::vector<size_t> sc(un), sd(un), rc(un), rd(un);
        size_t sendTotal = 0, recvTotal = 0;
        for (int q = 0; q < n; ++q) {
          sc[q] = static_cast<size_t>(q) + 1;
          sd[q] = sendTotal;
          sendTotal += sc[q];
          rc[q] = static_cast<size_t>(r) + 1;
          rd[q] = recvTotal;
          recvTotal += rc[q];
        }
        float* vin = deviceCopy(rankData(r, sendTotal));
        float* vout = deviceBuffer(recvTotal);
        expectSuccess(
            ternAlltoAllvOnStream(vin, sc.data(), sd.data(), vout, rc.data(), rd.data(), ternFloat32, comm, s),
            "alltoallv");
        ASSERT_TRUE(stream.synchronize());
        std::vector<float> want, wantv;
        for (int q = 0; q < n; ++q) {
          auto b = rankData(q, count, count * r);
          want.insert(want.end(), b.begin(), b.end());
          size_t qOffset = 0;
          for (int p = 0; p < r; ++p) qOffset += static_cast<size_t>(p) + 1;
          auto v = rankData(q, rc[q], qOffset);
          wantv.insert(wantv.end(), v.begin(), v.end());
        }
        EXPECT_EQ(hostCopy(out, count * un), want) << "alltoall";
        EXPECT_EQ(hostCopy(vout, recvTotal), wantv) << "alltoallv";
      }
      // Send/Recv around a ring (even ranks send first), then a barrier.
      if (n > 1) {
        const int next = (r + 1) % n, prev = (r + n - 1) % n;
        float* mine = deviceCopy(rankData(r, count));
        float* got = deviceBuffer(count);
        if (r % 2 == 0) {
          expectSuccess(ternSendOnStream(mine, count, ternFloat32, next, comm, s), "send");
          expectSuccess(ternRecvOnStream(got, count, ternFloat32, prev, comm, s), "recv");
        } else {
          expectSuccess(ternRecvOnStream(got, count, ternFloat32, prev, comm, s), "recv");
          expectSuccess(ternSendOnStream(mine, count, ternFloat32, next, comm, s), "send");
        }
        expectSuccess(ternBarrierOnStream(comm, s), "barrier");
        ASSERT_TRUE(stream.synchronize());
        EXPECT_EQ(hostCopy(got, count), rankData(prev, count)) << "recv";
      }
      ternResult_t async = ternInternalError;
      ASSERT_EQ(ternCommGetAsyncError(comm, &async), ternSuccess);
      EXPECT_EQ(async, ternSuccess) << ternGetLastError(comm);
    });
  }
}

TEST_F(StagedDeviceCallsTest, CallsReturnBeforeTheirStreamRunsThemAndHostCallsKeepTheOrder) {
  runOnRanks(2, Wire::kInproc, [&](ternComm_t comm, int r) {
    HostStream stream;
    stream.pause();  // a long kernel ahead of the collective
    const size_t count = 4099;
    float* in = deviceCopy(rankData(r, count));
    float* out = deviceBuffer(count);
    const auto start = std::chrono::steady_clock::now();
    expectSuccess(ternAllReduceOnStream(in, out, count, ternFloat32, ternSum, comm, asStream(stream)), "allreduce");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << "the call waited for its stream";
    EXPECT_GT(stream.pending(), 0u);
    // A host call made after it runs after it, on every rank: it waits here until the stream has staged the input.
    std::thread kernelEnds([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      stream.resume();
    });
    std::vector<float> host = rankData(r, 5);
    expectSuccess(ternAllReduce(host.data(), host.data(), host.size(), ternFloat32, ternSum, comm), "host allreduce");
    kernelEnds.join();
    ASSERT_TRUE(stream.synchronize());
    std::vector<float> want(count), wantHost(5);
    for (size_t i = 0; i < count; ++i) want[i] = valueOf(0, i) + valueOf(1, i);
    for (size_t i = 0; i < 5; ++i) wantHost[i] = valueOf(0, i) + valueOf(1, i);
    EXPECT_EQ(hostCopy(out, count), want);
    EXPECT_EQ(host, wantHost);
  });
}

TEST_F(StagedDeviceCallsTest, StagingMemoryIsPooledAndReused) {
  runOnRanks(2, Wire::kInproc, [&](ternComm_t comm, int r) {
    HostStream stream;
    const size_t count = 100000;
    float* in = deviceCopy(rankData(r, count));
    float* out = deviceBuffer(count);
    for (int i = 0; i < 50; ++i) {
      expectSuccess(ternAllReduceOnStream(in, out, count, ternFloat32, ternSum, comm, asStream(stream)), "allreduce");
      if (i % 10 == 9) {
        ASSERT_TRUE(stream.synchronize());
      }
    }
    ASSERT_TRUE(stream.synchronize());
  });
  // Two ranks, 50 calls each with a synchronize every 10: a handful of blocks (each up to 10 calls in flight) and the
  // flag, not one per call.
  EXPECT_LE(dev.pinnedAllocs.load(), 2 * 12);
  EXPECT_EQ(dev.stuckWaits.load(), 0);
}

TEST_F(StagedDeviceCallsTest, APeerThatNeverCallsFailsTheCommunicatorAndTheStreamGoesOn) {
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 1500;
  runOnRanks(
      2, Wire::kTcp,
      [&](ternComm_t comm, int r) {
        HostStream stream;
        float* in = deviceCopy(rankData(r, 1000));
        // The first stream-ordered call is where the ranks agree on the engine: both make it.
        expectSuccess(ternAllReduceOnStream(in, in, 1000, ternFloat32, ternSum, comm, asStream(stream)), "allreduce");
        ASSERT_TRUE(stream.synchronize());
        if (r == 1) return;  // never makes the next call
        expectSuccess(ternAllReduceOnStream(in, in, 1000, ternFloat32, ternSum, comm, asStream(stream)), "allreduce");
        EXPECT_TRUE(stream.synchronize(std::chrono::seconds(30))) << "the stream still waits on tern";
        ternResult_t async = ternSuccess;
        ASSERT_EQ(ternCommGetAsyncError(comm, &async), ternSuccess);
        EXPECT_NE(async, ternSuccess);
        EXPECT_NE(std::string(ternGetLastError(comm)), "");
      },
      &config);
  EXPECT_EQ(dev.stuckWaits.load(), 0);
}

TEST_F(StagedDeviceCallsTest, AStreamThatNeverGetsThereTimesOutAndIsReleasedWhenItDoes) {
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 500;
  runOnRanks(
      1, Wire::kInproc,
      [&](ternComm_t comm, int r) {
        HostStream stream;
        stream.pause();
        float* in = deviceCopy(rankData(r, 10));
        expectSuccess(ternAllReduceOnStream(in, in, 10, ternFloat32, ternSum, comm, asStream(stream)), "allreduce");
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        ternResult_t async = ternSuccess;
        ASSERT_EQ(ternCommGetAsyncError(comm, &async), ternSuccess);
        EXPECT_EQ(async, ternTimeout) << ternGetLastError(comm);
        EXPECT_NE(std::string(ternGetLastError(comm)).find("did not reach it within TERN_TIMEOUT"), std::string::npos)
            << ternGetLastError(comm);
        stream.resume();
        EXPECT_TRUE(stream.synchronize(std::chrono::seconds(30)));
      },
      &config);
  EXPECT_EQ(dev.stuckWaits.load(), 0);
}

TEST_F(StagedDeviceCallsTest, AnAbortReleasesEveryQueuedCall) {
  runOnRanks(1, Wire::kInproc, [&](ternComm_t comm, int r) {
    HostStream stream;
    stream.pause();
    float* in = deviceCopy(rankData(r, 10));
    for (int i = 0; i < 3; ++i) {
      expectSuccess(ternAllReduceOnStream(in, in, 10, ternFloat32, ternSum, comm, asStream(stream)), "allreduce");
    }
    std::thread kernelEnds([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      stream.resume();
    });
    EXPECT_EQ(ternCommAbort(comm), ternSuccess);
    kernelEnds.join();
    EXPECT_TRUE(stream.synchronize(std::chrono::seconds(30)));
  });
  EXPECT_EQ(dev.stuckWaits.load(), 0);
}

TEST_F(StagedDeviceCallsTest, AGroupOfSendsAndReceivesRunsTogetherOnTheStream) {
  for (auto [n, wire] : {std::pair{3, Wire::kInproc}, std::pair{2, Wire::kTcp}}) {
    SCOPED_TRACE(std::to_string(n) + " ranks over " + wireName(wire));
    runOnRanks(n, wire, [&](ternComm_t comm, int r) {
      HostStream stream;
      const cudaStream_t s = asStream(stream);
      const size_t count = 300000;  // larger than any transport buffers: the sends complete only with their receives
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      float* toNext = deviceCopy(rankData(r, count));
      float* toPrev = deviceCopy(rankData(r, count, count));
      float* fromPrev = deviceBuffer(count);
      float* fromNext = deviceBuffer(count);
      float* sum = deviceCopy(rankData(r, 5));
      ASSERT_EQ(ternGroupStart(), ternSuccess);
      expectSuccess(ternSendOnStream(toNext, count, ternFloat32, next, comm, s), "send");
      expectSuccess(ternSendOnStream(toPrev, count, ternFloat32, prev, comm, s), "send");
      expectSuccess(ternRecvOnStream(fromPrev, count, ternFloat32, prev, comm, s), "recv");
      expectSuccess(ternRecvOnStream(fromNext, count, ternFloat32, next, comm, s), "recv");
      expectSuccess(ternAllReduceOnStream(sum, sum, 5, ternFloat32, ternSum, comm, s), "allreduce");
      ASSERT_EQ(ternGroupEnd(), ternSuccess) << ternGetLastError(nullptr);
      ASSERT_TRUE(stream.synchronize());
      EXPECT_EQ(hostCopy(fromPrev, count), rankData(prev, count));
      EXPECT_EQ(hostCopy(fromNext, count), rankData(next, count, count));
      std::vector<float> want(5, 0.0f);
      for (int q = 0; q < n; ++q) {
        for (size_t i = 0; i < 5; ++i) want[i] += valueOf(q, i);
      }
      EXPECT_EQ(hostCopy(sum, 5), want);
    });
  }
}

TEST(StagedDeviceCallsWithoutDriver, SayWhyTheyCannotRun) {
  std::string why;
  if (deviceStreams(&why) != nullptr) GTEST_SKIP() << "this machine has a working CUDA driver";
  runOnRanks(1, Wire::kInproc, [&](ternComm_t comm, int) {
    float x = 1.0f;
    EXPECT_EQ(ternAllReduceOnStream(&x, &x, 1, ternFloat32, ternSum, comm, nullptr), ternInvalidUsage);
    EXPECT_NE(std::string(ternGetLastError(nullptr)).find("CUDA"), std::string::npos) << ternGetLastError(nullptr);
  });
}

}  // namespace
}  // namespace tern::testing
