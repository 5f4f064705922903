// Behaviour of the C API beyond data correctness: argument checking, async requests and their ordering, groups,
// split, abort, timeouts and secrets.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "base/unique_id.hpp"
#include "common/reference.hpp"
#include "kernels/reduce.hpp"
#include "rank_threads.hpp"
#include "tern/tern_ext.h"

namespace tern {
namespace {

using testing::runOnRanks;
using testing::Wire;
using Clock = std::chrono::steady_clock;

TEST(Api, VersionAndErrorStrings) {
  int v = 0;
  ASSERT_EQ(ternGetVersion(&v), ternSuccess);
  EXPECT_EQ(v, TERN_VERSION_CODE);
  EXPECT_EQ(ternGetVersion(nullptr), ternInvalidArgument);
  EXPECT_STREQ(ternGetErrorString(ternInvalidArgument), "invalid argument");
  EXPECT_STREQ(ternGetErrorString(ternTimeout), "operation timed out");
  // ABI values must match NCCL's.
  EXPECT_EQ(ternRemoteError, 6);
  EXPECT_EQ(ternBfloat16, 9);
  EXPECT_EQ(ternAvg, 4);
  EXPECT_EQ(sizeof(ternUniqueId), 128u);
}

TEST(Api, InvalidArgumentsAreRejectedWithAMessage) {
  runOnRanks(2, Wire::kInproc, [](ternComm_t comm, int rank) {
    float buf[4] = {};
    EXPECT_EQ(ternAllReduce(nullptr, buf, 4, ternFloat32, ternSum, comm), ternInvalidArgument);
    EXPECT_NE(std::strstr(ternGetLastError(comm), "sendbuff is NULL"), nullptr) << ternGetLastError(comm);
    EXPECT_EQ(ternAllReduce(buf, buf, 4, static_cast<ternDataType_t>(42), ternSum, comm), ternInvalidArgument);
    EXPECT_NE(std::strstr(ternGetLastError(comm), "invalid datatype"), nullptr);
    EXPECT_EQ(ternAllReduce(buf, buf, 4, ternFloat32, static_cast<ternRedOp_t>(-1), comm), ternInvalidArgument);
    EXPECT_NE(std::strstr(ternGetLastError(comm), "invalid reduction op"), nullptr);
    EXPECT_EQ(ternBroadcast(buf, buf, 4, ternFloat32, 7, comm), ternInvalidArgument);
    EXPECT_NE(std::strstr(ternGetLastError(comm), "root 7 out of range"), nullptr);
    EXPECT_EQ(ternReduce(buf, buf, 4, ternFloat32, ternSum, -1, comm), ternInvalidArgument);
    EXPECT_EQ(ternSend(buf, 4, ternFloat32, 2, comm), ternInvalidArgument);
    EXPECT_EQ(ternAllReduce(buf, buf, std::numeric_limits<size_t>::max() / 2, ternFloat64, ternSum, comm),
              ternInvalidArgument);
    EXPECT_NE(std::strstr(ternGetLastError(comm), "overflows"), nullptr);
    EXPECT_EQ(ternAllGather(buf, buf, std::numeric_limits<size_t>::max() / 4, ternFloat32, comm), ternInvalidArgument);
    EXPECT_EQ(ternAllReduce(buf, buf, 4, ternFloat32, ternSum, nullptr), ternInvalidArgument);
    // count 0 with NULL buffers is fine.
    EXPECT_EQ(ternAllReduce(nullptr, nullptr, 0, ternFloat32, ternSum, comm), ternSuccess);
    // Invalid arguments do not break the communicator.
    float one[1] = {1.0f};
    ASSERT_EQ(ternAllReduce(one, one, 1, ternFloat32, ternSum, comm), ternSuccess);
    EXPECT_EQ(one[0], 2.0f);
    (void)rank;
  });
  ternComm_t comm = nullptr;
  ternUniqueId id = makeInprocUniqueId().pack();
  EXPECT_EQ(ternCommInitRank(&comm, 0, id, 0), ternInvalidArgument);
  EXPECT_EQ(ternCommInitRank(&comm, 2, id, 2), ternInvalidArgument);
  ternUniqueId garbage;
  std::memset(&garbage, 0x5a, sizeof(garbage));
  EXPECT_EQ(ternCommInitRank(&comm, 1, garbage, 0), ternInvalidArgument);
  EXPECT_NE(std::strstr(ternGetLastError(nullptr), "unique id"), nullptr);
  ternConfig_t bad = TERN_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(ternCommInitRankConfig(&comm, 1, id, 0, &bad), ternInvalidArgument);
  // A codec that does not parse fails init, naming the field and the codec; one that does is taken.
  ternConfig_t codec = TERN_CONFIG_INITIALIZER;
  codec.compress = "bf17";
  EXPECT_EQ(ternCommInitRankConfig(&comm, 1, makeInprocUniqueId().pack(), 0, &codec), ternInvalidArgument);
  EXPECT_NE(std::strstr(ternGetLastError(nullptr), "config.compress \"bf17\""), nullptr) << ternGetLastError(nullptr);
  codec.compress = "bf16";
  ASSERT_EQ(ternCommInitRankConfig(&comm, 1, makeInprocUniqueId().pack(), 0, &codec), ternSuccess);
  EXPECT_EQ(ternCommDestroy(comm), ternSuccess);
  // A config from an older header, which ends before compress, still initializes (its size says where it ends).
  ternConfig_t older = TERN_CONFIG_INITIALIZER;
  older.size = offsetof(ternConfig_t, compress);
  older.compress = "bf17";  // beyond what that header knew: never read
  ASSERT_EQ(ternCommInitRankConfig(&comm, 1, makeInprocUniqueId().pack(), 0, &older), ternSuccess);
  EXPECT_EQ(ternCommDestroy(comm), ternSuccess);
}

TEST(Api, CountRankAndSingleRank) {
  runOnRanks(1, Wire::kInproc, [](ternComm_t comm, int) {
    int n = 0, r = -1;
    ASSERT_EQ(ternCommCount(comm, &n), ternSuccess);
    ASSERT_EQ(ternCommUserRank(comm, &r), ternSuccess);
    EXPECT_EQ(n, 1);
    EXPECT_EQ(r, 0);
    int hosts = 0;
    ASSERT_EQ(ternCommHostCount(comm, &hosts), ternSuccess);
    EXPECT_EQ(hosts, 1);
    EXPECT_EQ(ternCommHostCount(comm, nullptr), ternInvalidArgument);
    EXPECT_EQ(ternCommHostCount(nullptr, &hosts), ternInvalidArgument);
    double x = 3.5, y = 0;
    ASSERT_EQ(ternAllReduce(&x, &y, 1, ternFloat64, ternAvg, comm), ternSuccess);
    EXPECT_EQ(y, 3.5);
    ASSERT_EQ(ternBarrier(comm), ternSuccess);
  });
}

TEST(Api, AsyncOperationsOverlapAndCompleteInIssueOrder) {
  for (Wire wire : {Wire::kInproc, Wire::kTcp}) {
    runOnRanks(3, wire, [](ternComm_t comm, int rank) {
      const size_t count = 1 << 18;
      std::vector<float> a(count, static_cast<float>(rank + 1)), b(count, 1.0f);
      ternRequest_t r1 = nullptr, r2 = nullptr;
      ASSERT_EQ(ternAllReduceAsync(a.data(), a.data(), count, ternFloat32, ternSum, comm, &r1), ternSuccess);
      // Issued while the first is in flight; must run after it, so it sees nothing of a.
      ASSERT_EQ(ternAllReduceAsync(b.data(), b.data(), count, ternFloat32, ternSum, comm, &r2), ternSuccess);
      ternResult_t state = ternSuccess;
      ASSERT_EQ(ternCommGetAsyncError(comm, &state), ternSuccess);
      EXPECT_TRUE(state == ternSuccess || state == ternInProgress);
      int done = 0;
      while (!done) ASSERT_EQ(ternTest(r2, &done), ternSuccess);
      ASSERT_EQ(ternWait(r1), ternSuccess);  // already complete: issue order
      EXPECT_EQ(a[0], 6.0f);
      EXPECT_EQ(a[count - 1], 6.0f);
      EXPECT_EQ(b[count / 2], 3.0f);
      // A blocking call after async ones waits its turn.
      float x = 1;
      ternRequest_t r3 = nullptr;
      ASSERT_EQ(ternAllReduceAsync(a.data(), a.data(), count, ternFloat32, ternSum, comm, &r3), ternSuccess);
      ASSERT_EQ(ternAllReduce(&x, &x, 1, ternFloat32, ternSum, comm), ternSuccess);
      EXPECT_EQ(x, 3.0f);
      ASSERT_EQ(ternWait(r3), ternSuccess);
      EXPECT_EQ(a[5], 18.0f);
    });
  }
}

// Once a call has been waited for, nothing of it is left in progress: the worker that ran it must not still count
// itself busy after it woke the waiter (ncclCommGetAsyncError after a group end returned ncclInProgress so).
TEST(Api, AWaitedCallLeavesNothingInProgress) {
  runOnRanks(2, Wire::kInproc, [](ternComm_t comm, int) {
    for (int i = 0; i < 300; ++i) {
      float x = 1;
      ternRequest_t r = nullptr;
      ASSERT_EQ(ternAllReduceAsync(&x, &x, 1, ternFloat32, ternSum, comm, &r), ternSuccess);
      ASSERT_EQ(ternWait(r), ternSuccess);
      ternResult_t state = ternInternalError;
      ASSERT_EQ(ternCommGetAsyncError(comm, &state), ternSuccess);
      EXPECT_EQ(state, ternSuccess) << "call " << i;  // not ASSERT: the peer still expects every call
      EXPECT_EQ(x, 2.0f);
    }
  });
}

TEST(Api, GroupedSendRecvToEachOtherDoesNotDeadlock) {
  for (Wire wire : {Wire::kInproc, Wire::kTcp}) {
    runOnRanks(4, wire, [](ternComm_t comm, int rank) {
      const int n = 4;
      const size_t count = 300001;  // large enough that unbuffered sends would block
      std::vector<int32_t> out(count * n), in(count * n, -1);
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(rank * 1000 + i % 1000);
      ASSERT_EQ(ternGroupStart(), ternSuccess);
      for (int p = 0; p < n; ++p) {
        ASSERT_EQ(ternSend(out.data() + p * count, count, ternInt32, p, comm), ternSuccess);
        ASSERT_EQ(ternRecv(in.data() + p * count, count, ternInt32, p, comm), ternSuccess);
      }
      ASSERT_EQ(ternGroupEnd(), ternSuccess);
      for (int p = 0; p < n; ++p) {
        EXPECT_EQ(in[p * count + 7], p * 1000 + static_cast<int32_t>((rank * count + 7) % 1000)) << "from " << p;
      }
    });
  }
  EXPECT_EQ(ternGroupEnd(), ternInvalidUsage);
}

TEST(Api, SplitMakesWorkingSubCommunicators) {
  for (Wire wire : {Wire::kInproc, Wire::kTcp}) {
    runOnRanks(5, wire, [](ternComm_t comm, int rank) {
      ternComm_t sub = nullptr;
      int color = rank == 4 ? -1 : rank % 2;
      ASSERT_EQ(ternCommSplit(comm, color, -rank, &sub, nullptr), ternSuccess) << ternGetLastError(comm);
      if (rank == 4) {
        EXPECT_EQ(sub, nullptr);
        return;
      }
      ASSERT_NE(sub, nullptr);
      int n = 0, r = -1;
      ternCommCount(sub, &n);
      ternCommUserRank(sub, &r);
      EXPECT_EQ(n, 2);
      EXPECT_EQ(r, rank < 2 ? 1 : 0);  // key -rank reverses the order
      int v = rank, sum = 0;
      ASSERT_EQ(ternAllReduce(&v, &sum, 1, ternInt32, ternSum, sub), ternSuccess);
      EXPECT_EQ(sum, color == 0 ? 0 + 2 : 1 + 3);
      ternCommDestroy(sub);
    });
  }
}

TEST(Api, AbortFromAnotherThreadUnblocksAWaitingCallWithinASecond) {
  for (Wire wire : {Wire::kInproc, Wire::kTcp}) {
    ternUniqueId id;
    if (wire == Wire::kInproc) {
      id = makeInprocUniqueId().pack();
    } else {
      ASSERT_EQ(ternGetUniqueId(&id), ternSuccess);
    }
    ternComm_t comms[2] = {nullptr, nullptr};
    std::thread t1([&] { ASSERT_EQ(ternCommInitRank(&comms[1], 2, id, 1), ternSuccess); });
    ASSERT_EQ(ternCommInitRank(&comms[0], 2, id, 0), ternSuccess);
    t1.join();
    // Rank 0 calls allreduce; rank 1 never does, so rank 0 waits until the abort.
    std::atomic<ternResult_t> result{ternSuccess};
    std::atomic<bool> returned{false};
    Clock::time_point returnedAt;
    std::thread waiter([&] {
      float x = 1;
      result = ternAllReduce(&x, &x, 1, ternFloat32, ternSum, comms[0]);
      returnedAt = Clock::now();
      returned = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(returned.load());
    auto abortAt = Clock::now();
    ASSERT_EQ(ternCommAbort(comms[0]), ternSuccess);
    waiter.join();
    EXPECT_TRUE(returned.load());
    EXPECT_NE(result.load(), ternSuccess);
    EXPECT_LT(std::chrono::duration<double>(returnedAt - abortAt).count(), 1.0);
    // The peer learns of it: its operations fail instead of hanging. (The first may still complete: rank 0's
    // aborted call had already sent its data, which rank 1 may legitimately consume.)
    float y = 1;
    ternResult_t peer = ternSuccess;
    for (int i = 0; i < 3 && peer == ternSuccess; ++i) peer = ternAllReduce(&y, &y, 1, ternFloat32, ternSum, comms[1]);
    EXPECT_NE(peer, ternSuccess);
    EXPECT_NE(std::strlen(ternGetLastError(comms[1])), 0u);
    ternCommDestroy(comms[1]);
  }
}

TEST(Api, AWaitWithoutPeerTimesOut) {
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 300;
  ternUniqueId id = makeInprocUniqueId().pack();
  ternComm_t comms[2] = {nullptr, nullptr};
  std::thread t1([&] { ASSERT_EQ(ternCommInitRankConfig(&comms[1], 2, id, 1, &config), ternSuccess); });
  ASSERT_EQ(ternCommInitRankConfig(&comms[0], 2, id, 0, &config), ternSuccess);
  t1.join();
  float x = 1;
  auto start = Clock::now();
  EXPECT_EQ(ternAllReduce(&x, &x, 1, ternFloat32, ternSum, comms[0]), ternTimeout);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  EXPECT_NE(std::strstr(ternGetLastError(comms[0]), "timed out"), nullptr) << ternGetLastError(comms[0]);
  ternResult_t async = ternSuccess;
  ternCommGetAsyncError(comms[0], &async);
  EXPECT_EQ(async, ternTimeout);
  ternCommDestroy(comms[0]);
  ternCommDestroy(comms[1]);
}

TEST(Api, ARankWithTheWrongSecretIsRefused) {
  ternUniqueId id;
  ASSERT_EQ(ternGetUniqueId(&id), ternSuccess);
  UniqueIdData forged = UniqueIdData::unpack(id);
  forged.secret.bytes[0] ^= 0xff;
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 3000;
  ternComm_t intruder = nullptr;
  ternResult_t intruderResult = ternSuccess;
  std::thread bad([&] { intruderResult = ternCommInitRankConfig(&intruder, 2, forged.pack(), 1, &config); });
  bad.join();
  EXPECT_NE(intruderResult, ternSuccess);
  EXPECT_EQ(intruder, nullptr);
  // The real ranks still form their communicator.
  ternComm_t comms[2] = {nullptr, nullptr};
  std::thread t1([&] { EXPECT_EQ(ternCommInitRankConfig(&comms[1], 2, id, 1, &config), ternSuccess); });
  EXPECT_EQ(ternCommInitRankConfig(&comms[0], 2, id, 0, &config), ternSuccess);
  t1.join();
  int v = 1;
  std::thread t2([&] { EXPECT_EQ(ternAllReduce(&v, &v, 1, ternInt32, ternSum, comms[1]), ternSuccess); });
  int w = 1;
  EXPECT_EQ(ternAllReduce(&w, &w, 1, ternInt32, ternSum, comms[0]), ternSuccess);
  t2.join();
  EXPECT_EQ(w, 2);
  ternCommDestroy(comms[0]);
  ternCommDestroy(comms[1]);
}

TEST(Api, MismatchedCountsAreReportedNotCorrupted) {
  for (Wire wire : {Wire::kInproc, Wire::kTcp}) {
    runOnRanks(2, wire, [](ternComm_t comm, int rank) {
      std::vector<float> buf(1000, 1.0f);
      ternResult_t r = ternAllReduce(buf.data(), buf.data(), rank == 0 ? 1000 : 500, ternFloat32, ternSum, comm);
      EXPECT_NE(r, ternSuccess);
      EXPECT_NE(std::strlen(ternGetLastError(comm)), 0u);
    });
  }
}

TEST(Api, QueryAlgorithmNamesWhatRuns) {
  runOnRanks(2, Wire::kInproc, [](ternComm_t comm, int) {
    char name[32] = {0};
    double us = -1;
    ASSERT_EQ(ternQueryAlgorithm(comm, "allreduce", 1 << 20, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_GT(std::strlen(name), 0u);
    EXPECT_EQ(ternQueryAlgorithm(comm, "nonsense", 1, ternFloat32, name, sizeof(name), &us), ternInvalidArgument);
    EXPECT_STREQ(ternCommTransportName(comm), "inproc");
  });
}

TEST(Api, LastAlgorithmNamesWhatRan) {
  runOnRanks(2, Wire::kInproc, [](ternComm_t comm, int rank) {
    char name[64] = "x";
    ASSERT_EQ(ternCommLastAlgorithm(comm, name, sizeof(name)), ternSuccess);
    EXPECT_STREQ(name, "") << "before any collective";
    EXPECT_EQ(ternCommLastAlgorithm(comm, nullptr, 8), ternInvalidArgument);
    EXPECT_EQ(ternCommLastAlgorithm(comm, name, 0), ternInvalidArgument);

    const size_t count = 1 << 18;
    std::vector<float> in(count, 1.0f), out(count);
    char expected[64] = "";
    ASSERT_EQ(ternQueryAlgorithm(comm, "allreduce", count, ternFloat32, expected, sizeof(expected), nullptr),
              ternSuccess);
    ASSERT_EQ(ternAllReduce(in.data(), out.data(), count, ternFloat32, ternSum, comm), ternSuccess);
    ASSERT_EQ(ternCommLastAlgorithm(comm, name, sizeof(name)), ternSuccess);
    EXPECT_STREQ(name, expected);
    ASSERT_EQ(ternAllGather(in.data(), out.data(), 16, ternFloat32, comm), ternSuccess);
    ASSERT_EQ(ternQueryAlgorithm(comm, "allgather", 16, ternFloat32, expected, sizeof(expected), nullptr), ternSuccess);
    ASSERT_EQ(ternCommLastAlgorithm(comm, name, sizeof(name)), ternSuccess);
    EXPECT_STREQ(name, expected);

    ternCompressor_t sign = nullptr;
    ASSERT_EQ(ternCompressorCreate("sign", nullptr, count, ternFloat32, &sign), ternSuccess);
    ASSERT_EQ(ternAllReduceCompressed(in.data(), out.data(), count, ternFloat32, ternSum, sign, comm), ternSuccess);
    ASSERT_EQ(ternCommLastAlgorithm(comm, name, sizeof(name)), ternSuccess);
    EXPECT_STREQ(name, "compressed_2phase (sign)");
    ternCompressorDestroy(sign);

    const int peer = 1 - rank;
    ASSERT_EQ(ternGroupStart(), ternSuccess);
    ASSERT_EQ(ternSend(in.data(), 8, ternFloat32, peer, comm), ternSuccess);
    ASSERT_EQ(ternRecv(out.data(), 8, ternFloat32, peer, comm), ternSuccess);
    ASSERT_EQ(ternGroupEnd(), ternSuccess);
    ASSERT_EQ(ternCommLastAlgorithm(comm, name, sizeof(name)), ternSuccess);
    EXPECT_STREQ(name, "p2p");

    char small[4] = "";
    ASSERT_EQ(ternCommLastAlgorithm(comm, small, sizeof(small)), ternSuccess);
    EXPECT_STREQ(small, "p2p");
  });
}

TEST(Api, ConvertRoundsLikeTheCoreAndRefusesOtherTypes) {
  const std::vector<float> in = {1.0f, -2.5f, 65504.0f, 1e-8f, 3.14159265f, 70000.0f};
  std::vector<uint16_t> half(in.size()), bf(in.size());
  ASSERT_EQ(ternConvert(in.data(), ternFloat32, half.data(), ternFloat16, in.size()), ternSuccess);
  ASSERT_EQ(ternConvert(in.data(), ternFloat32, bf.data(), ternBfloat16, in.size()), ternSuccess);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(half[i], floatToHalf(in[i])) << i;
    EXPECT_EQ(bf[i], floatToBfloat16(in[i])) << i;
  }
  EXPECT_EQ(half[5], 0x7c00u);  // out of fp16 range: infinity
  std::vector<float> back(in.size());
  ASSERT_EQ(ternConvert(half.data(), ternFloat16, back.data(), ternFloat32, in.size()), ternSuccess);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -2.5f);
  std::vector<double> wide(in.size());
  ASSERT_EQ(ternConvert(bf.data(), ternBfloat16, wide.data(), ternFloat64, in.size()), ternSuccess);
  EXPECT_EQ(wide[1], -2.5);
  int32_t x = 0;
  EXPECT_EQ(ternConvert(&x, ternInt32, back.data(), ternFloat32, 1), ternInvalidArgument);
  EXPECT_EQ(ternConvert(nullptr, ternFloat32, back.data(), ternFloat16, 1), ternInvalidArgument);
  EXPECT_EQ(ternConvert(nullptr, ternFloat32, nullptr, ternFloat16, 0), ternSuccess);
}

// ternConvert against the independent reference's rounding (tests/common/reference.hpp), over a sweep of float bit
// patterns that crosses every exponent (normals, subnormals, overflow to infinity, NaNs) and over every 16-bit
// pattern back to float.
TEST(Api, ConvertMatchesTheIndependentReferenceEverywhere) {
  std::vector<float> in;
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 4099) in.push_back(std::bit_cast<float>(uint32_t(bits)));
  std::vector<uint16_t> half(in.size()), bf(in.size());
  ASSERT_EQ(ternConvert(in.data(), ternFloat32, half.data(), ternFloat16, in.size()), ternSuccess);
  ASSERT_EQ(ternConvert(in.data(), ternFloat32, bf.data(), ternBfloat16, in.size()), ternSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) {  // any quiet NaN will do; the payload is the library's to choose
      wrong += (half[i] & 0x7c00u) != 0x7c00u || (half[i] & 0x3ffu) == 0;
      wrong += (bf[i] & 0x7f80u) != 0x7f80u || (bf[i] & 0x7fu) == 0;
      continue;
    }
    wrong += half[i] != ref::floatToHalf(in[i]);
    wrong += bf[i] != ref::floatToBf16(in[i]);
  }
  EXPECT_EQ(wrong, 0u) << "of " << in.size() << " floats";
  std::vector<uint16_t> all(65536);
  for (size_t h = 0; h < all.size(); ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> fromHalf(all.size()), fromBf(all.size());
  ASSERT_EQ(ternConvert(all.data(), ternFloat16, fromHalf.data(), ternFloat32, all.size()), ternSuccess);
  ASSERT_EQ(ternConvert(all.data(), ternBfloat16, fromBf.data(), ternFloat32, all.size()), ternSuccess);
  for (size_t h = 0; h < all.size(); ++h) {
    const float wantHalf = ref::halfToFloat(all[h]), wantBf = ref::bf16ToFloat(all[h]);
    if (std::isnan(wantHalf)) {
      EXPECT_TRUE(std::isnan(fromHalf[h])) << h;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(fromHalf[h]), std::bit_cast<uint32_t>(wantHalf)) << h;
    }
    if (std::isnan(wantBf)) {
      EXPECT_TRUE(std::isnan(fromBf[h])) << h;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(fromBf[h]), std::bit_cast<uint32_t>(wantBf)) << h;
    }
  }
}

TEST(Api, QueryCompressedAlgorithmNamesTheCompressedScheduleAndPricesIt) {
  runOnRanks(2, Wire::kInproc, [](ternComm_t comm, int) {
    char name[48] = {0};
    double sign = -1, topk = -1;
    ASSERT_EQ(ternQueryCompressedAlgorithm(comm, "allreduce", 1 << 22, ternFloat32, "sign", name, sizeof(name), &sign),
              ternSuccess)
        << ternGetLastError(comm);
    EXPECT_STREQ(name, "compressed_2phase");
    EXPECT_GT(sign, 0.0);
    ASSERT_EQ(
        ternQueryCompressedAlgorithm(comm, "allreduce", 1 << 22, ternFloat32, "topk:0.01", name, sizeof(name), &topk),
        ternSuccess);
    EXPECT_STREQ(name, "sparse_allgather");
    EXPECT_EQ(ternQueryCompressedAlgorithm(comm, "allreduce", 16, ternFloat32, "nonsense", name, sizeof(name), &sign),
              ternInvalidArgument);
    EXPECT_EQ(ternQueryCompressedAlgorithm(comm, "broadcast", 16, ternFloat32, "sign", name, sizeof(name), &sign),
              ternInvalidArgument);
    EXPECT_EQ(ternQueryCompressedAlgorithm(comm, "allreduce", 16, ternFloat32, nullptr, name, sizeof(name), &sign),
              ternInvalidArgument);
  });
}

}  // namespace
}  // namespace tern
