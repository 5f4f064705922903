// What every network transport must do (src/transport/transport.hpp), as test bodies shared by the UCX and
// ibverbs tests: ordered mixed-size messages in both directions at once, FIFO matching of many equal-size messages,
// size mismatches reported as errors, progress() sleeping rather than spinning, abort() from another thread waking
// the sleeper and reaching the peer, and a peer that vanishes turning into an error rather than a hang.
#pragma once

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "network_mesh.hpp"

namespace tern::testing::conformance {

inline uint8_t byteOf(int from, int to, size_t msg, size_t i) {
  return static_cast<uint8_t>(from * 131 + to * 71 + msg * 29 + i * 7 + (i >> 11));
}

// Zero bytes, eager sizes, sizes around chunk/registration thresholds (128 KiB, 256 KiB) and multi-megabyte ones.
inline const std::vector<size_t>& mixedSizes() {
  static const std::vector<size_t> sizes = {0,      1,      100,     8191,    65539, 131040, 131072,
                                            262143, 262144, 1000003, 5000007, 0,     13};
  return sizes;
}

inline void exchangeAll(Transport& t, int r, int n) {
  const auto& sizes = mixedSizes();
  std::vector<std::vector<std::vector<uint8_t>>> sends(n), recvs(n);
  std::vector<std::vector<Transfer>> st(n, std::vector<Transfer>(sizes.size()));
  std::vector<std::vector<Transfer>> rt(n, std::vector<Transfer>(sizes.size()));
  std::vector<Transfer*> all;
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    for (size_t m = 0; m < sizes.size(); ++m) {
      std::vector<uint8_t> s(sizes[m]);
      for (size_t i = 0; i < s.size(); ++i) s[i] = byteOf(r, p, m, i);
      sends[p].push_back(std::move(s));
      recvs[p].emplace_back(sizes[m], 0xee);
    }
  }
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    for (size_t m = 0; m < sizes.size(); ++m) {
      t.postRecv(p, recvs[p][m].data(), sizes[m], &rt[p][m]);
      t.postSend(p, sends[p][m].data(), sizes[m], &st[p][m]);
      all.push_back(&rt[p][m]);
      all.push_back(&st[p][m]);
    }
  }
  ASSERT_TRUE(t.hasPending());
  ASSERT_TRUE(waitAll(t, all));
  EXPECT_FALSE(t.hasPending());
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    for (size_t m = 0; m < sizes.size(); ++m) {
      const std::vector<uint8_t>& got = recvs[p][m];
      size_t bad = got.size();
      for (size_t i = 0; i < got.size() && bad == got.size(); ++i) {
        if (got[i] != byteOf(p, r, m, i)) bad = i;
      }
      EXPECT_EQ(bad, got.size()) << "rank " << r << ": message " << m << " (" << sizes[m] << " bytes) from rank " << p
                                 << " wrong at byte " << bad;
    }
  }
}

inline void orderedMixedSizes(const NetworkFactory& factory, const char* expectedName) {
  for (int n : {2, 3}) {
    runNetworkRanks(n, 60000, factory, [&](Transport& t, TcpTransport&, int r) {
      EXPECT_STREQ(t.name(), expectedName);
      for (int round = 0; round < 2; ++round) exchangeAll(t, r, n);
    });
  }
}

// Many equal-size messages posted back to back: the k-th receive gets the k-th send.
inline void fifoMatchingOfEqualSizes(const NetworkFactory& factory) {
  const int kMessages = 300;
  runNetworkRanks(2, 60000, factory, [&](Transport& t, TcpTransport&, int r) {
    std::vector<uint32_t> out(kMessages), in(kMessages, 0xffffffffu);
    std::vector<Transfer> sends(kMessages), recvs(kMessages);
    std::vector<Transfer*> all;
    for (int k = 0; k < kMessages; ++k) {
      out[k] = static_cast<uint32_t>(r * 100000 + k);
      t.postSend(1 - r, &out[k], sizeof(uint32_t), &sends[k]);
      t.postRecv(1 - r, &in[k], sizeof(uint32_t), &recvs[k]);
      all.push_back(&sends[k]);
      all.push_back(&recvs[k]);
    }
    ASSERT_TRUE(waitAll(t, all));
    for (int k = 0; k < kMessages; ++k) ASSERT_EQ(in[k], static_cast<uint32_t>((1 - r) * 100000 + k)) << k;
  });
}

// The receiver expects 200 bytes: a shorter or a longer message is a usage error on the receiver, never data.
inline void sizeMismatchIsAnError(const NetworkFactory& factory) {
  for (size_t sent : {size_t{100}, size_t{300}, size_t{3000000}}) {
    runNetworkRanks(2, 20000, factory, [&](Transport& t, TcpTransport&, int r) {
      std::vector<uint8_t> buf(std::max(sent, size_t{200}), 1);
      Transfer x;
      if (r == 0) {
        t.postSend(1, buf.data(), sent, &x);
        // The sender may or may not learn of the failure (a send can complete locally); it must not hang.
        try {
          waitAll(t, {&x}, 15000);
        } catch (const Error&) {
        }
        return;
      }
      t.postRecv(0, buf.data(), 200, &x);
      try {
        waitAll(t, {&x}, 10000);
        ADD_FAILURE() << "a " << sent << "-byte message was accepted by a 200-byte receive";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ternInvalidUsage) << e.what();
        EXPECT_NE(std::string(e.what()).find("rank 0 sent a message"), std::string::npos) << e.what();
        EXPECT_THROW(t.progress(0), Error) << "a failed transport must keep failing";
      }
    });
  }
}

inline double threadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Waiting 1.5 s for a late message costs (almost) no CPU.
inline void progressSleepsWhileWaiting(const NetworkFactory& factory) {
  runNetworkRanks(2, 30000, factory, [&](Transport& t, TcpTransport&, int r) {
    uint64_t value = 0;
    Transfer x;
    if (r == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      value = 42;
      t.postSend(1, &value, sizeof(value), &x);
      waitAll(t, {&x});
      return;
    }
    t.postRecv(0, &value, sizeof(value), &x);
    auto wall0 = Clock::now();
    double cpu0 = threadCpuSeconds();
    waitAll(t, {&x});
    double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
    double cpu = threadCpuSeconds() - cpu0;
    EXPECT_EQ(value, 42u);
    EXPECT_GT(wall, 1.0);
    EXPECT_LT(cpu, 0.25 * wall) << "progress() burned " << cpu << " s of CPU in " << wall << " s of waiting";
  });
}

// abort() from another thread wakes a long progress() at once; the peer, waiting on this rank, fails soon after
// instead of at its timeout.
inline void abortFromAnotherThread(const NetworkFactory& factory) {
  runNetworkRanks(2, 30000, factory, [&](Transport& t, TcpTransport&, int r) {
    uint64_t value = 0;
    Transfer x;
    t.postRecv(1 - r, &value, sizeof(value), &x);  // never sent
    std::thread aborter;
    if (r == 0) {
      aborter = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        t.abort("test abort");
      });
    }
    auto t0 = Clock::now();
    try {
      for (int i = 0; i < 100; ++i) t.progress(10000);
      ADD_FAILURE() << "rank " << r << ": progress never failed";
    } catch (const Error& e) {
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      EXPECT_EQ(e.code(), ternRemoteError) << e.what();
      EXPECT_LT(s, 5.0) << "rank " << r << " noticed only after " << s << " s: " << e.what();
      if (r == 0) {
        EXPECT_LT(s, 1.5) << "abort did not wake the sleeping progress()";
        EXPECT_NE(std::string(e.what()).find("test abort"), std::string::npos) << e.what();
      }
    }
    if (aborter.joinable()) aborter.join();
  });
}

// A peer that disappears (transport and TCP mesh closed, as the kernel does for a killed process) while this rank
// waits for it: an error within seconds, naming the peer.
inline void vanishedPeerIsAnError(const NetworkFactory& factory) {
  UniqueIdData id = createTcpUniqueId();
  std::atomic<bool> ready{false};
  std::thread peer([&] {
    try {
      NetworkRank me(id, 1, 2, 20000, factory);
      while (!ready.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      me.close();
    } catch (const Error& e) {
      ADD_FAILURE() << "rank 1: " << e.what();
    }
  });
  try {
    NetworkRank me(id, 0, 2, 20000, factory);
    uint64_t value = 0;
    Transfer x;
    me.net->postRecv(1, &value, sizeof(value), &x);
    ready = true;
    auto t0 = Clock::now();
    try {
      for (int i = 0; i < 100; ++i) me.net->progress(1000);
      ADD_FAILURE() << "progress never failed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ternRemoteError) << e.what();
      EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
    }
  } catch (const Error& e) {
    ADD_FAILURE() << "rank 0: " << e.what();
  }
  ready = true;
  peer.join();
}

}  // namespace tern::testing::conformance
