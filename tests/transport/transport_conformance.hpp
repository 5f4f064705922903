// What every transport must do (src/transport/transport.hpp), as test bodies shared by the tests of every transport
// (tests/transport: inproc, tcp, shm; tests/ucx; tests/ibverbs):
//   - payloads: every byte of every message is compared with an independent pattern, a hash of (sender, receiver,
//     message number, byte index); receive buffers start as the pattern's complement (a byte the transport did not
//     write is always wrong) and are fenced by guard bytes (a write past either end is caught);
//   - sizes: 0, 1, 7, 13, 1023, 2^20+3 and others around eager/rendezvous and chunk thresholds, with runs of equal
//     sizes, so that a message delivered to the wrong receive shows up as wrong bytes, not only as a size error;
//   - many messages in flight at once to and from several peers, posted receives-first, sends-first (unexpected
//     messages) and shuffled across peers, and the contract's FIFO matching per (peer, direction);
//   - errors: size mismatches (including off by one) reported on the receiver, progress() sleeping rather than
//     spinning and returning when its wait is over, abort() from another thread waking the sleeper and reaching the
//     peer, a peer that vanishes while this rank waits on a receive or on a send, and a peer that never sets up its
//     side, each an error with a message (not a hang) within the deadline; and a peer that sent everything and left
//     before its messages were read, which is no error.
// faulty_transport.hpp breaks a real transport in each of the ways these checks are meant to catch, and the UCX
// tests run the checks over it to show that they fail.
#pragma once

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "network_mesh.hpp"

namespace tern::testing::conformance {

// ---- The payload pattern, independent of every transport ----------------------------------------------------------

// splitmix64's finalizer: a bijection on 64-bit words whose outputs look unrelated for nearby inputs. An arithmetic
// ramp would repeat every 256 bytes and could not see a chunk shifted or duplicated by a multiple of that.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Message `msg` from `from` to `to` is the stream of words patternWord(key, 0), patternWord(key, 1), ... (bytes in
// little-endian order) with key = patternKey(from, to, msg).
inline uint64_t patternKey(int from, int to, uint64_t msg) {
  return mix64((static_cast<uint64_t>(from) << 44) ^ (static_cast<uint64_t>(to) << 24) ^ msg);
}
inline uint64_t patternWord(uint64_t key, uint64_t word) { return mix64(key ^ mix64(word)); }

// Writes the pattern, or its complement (a buffer in which no byte is right).
inline void fillPattern(uint8_t* out, size_t bytes, int from, int to, uint64_t msg, bool complement = false) {
  uint64_t key = patternKey(from, to, msg);
  uint64_t flip = complement ? ~uint64_t{0} : 0;
  for (size_t w = 0; w * 8 < bytes; ++w) {
    uint64_t v = patternWord(key, w) ^ flip;
    for (size_t b = 0; b < 8 && w * 8 + b < bytes; ++b) out[w * 8 + b] = static_cast<uint8_t>(v >> (8 * b));
  }
}

// How many of data[0, bytes) differ from the pattern; *first gets the first such index (bytes when none).
inline size_t countWrongBytes(const uint8_t* data, size_t bytes, int from, int to, uint64_t msg, size_t* first) {
  uint64_t key = patternKey(from, to, msg);
  size_t wrong = 0;
  *first = bytes;
  for (size_t w = 0; w * 8 < bytes; ++w) {
    uint64_t expected = patternWord(key, w);
    for (size_t b = 0; b < 8 && w * 8 + b < bytes; ++b) {
      if (data[w * 8 + b] != static_cast<uint8_t>(expected >> (8 * b)) && wrong++ == 0) *first = w * 8 + b;
    }
  }
  return wrong;
}

inline std::vector<uint8_t> patternMessage(size_t bytes, int from, int to, uint64_t msg) {
  std::vector<uint8_t> v(bytes);
  fillPattern(v.data(), bytes, from, to, msg);
  return v;
}

// A receive buffer for message `msg` from `from` to `to`: the body starts as the pattern's complement, guards of
// kGuardBytes on both sides hold kGuardByte.
class RecvBuffer {
 public:
  static constexpr size_t kGuardBytes = 64;
  static constexpr uint8_t kGuardByte = 0xa5;

  RecvBuffer(size_t bytes, int from, int to, uint64_t msg)
      : bytes_(bytes), from_(from), to_(to), msg_(msg), storage_(bytes + 2 * kGuardBytes, kGuardByte) {
    fillPattern(data(), bytes, from, to, msg, true);
  }
  uint8_t* data() { return storage_.data() + kGuardBytes; }
  size_t size() const { return bytes_; }

  // Empty when the body is exactly the pattern and the guards are untouched; otherwise what is wrong.
  std::string problem() const {
    const uint8_t* body = storage_.data() + kGuardBytes;
    size_t first = 0;
    size_t wrong = countWrongBytes(body, bytes_, from_, to_, msg_, &first);
    std::string out;
    if (wrong > 0) {
      out = "wrong at byte " + std::to_string(first) + " (" + std::to_string(wrong) + " of " + std::to_string(bytes_) +
            " bytes wrong";
      if (first == bytes_ - 1 && wrong == 1) out += ": the last byte";
      out += ")";
    }
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (storage_[i] != kGuardByte || storage_[kGuardBytes + bytes_ + i] != kGuardByte) {
        out += (out.empty() ? "" : "; ") + std::string("written past its end or before its start");
        break;
      }
    }
    return out;
  }

 private:
  size_t bytes_;
  int from_, to_;
  uint64_t msg_;
  std::vector<uint8_t> storage_;
};

// ---- Exchanges -----------------------------------------------------------------------------------------------------

enum class PostOrder {
  kReceivesFirst,  // every receive posted before any send: messages land in posted receives
  kSendsFirst,     // every send first: messages arrive before their receive exists (unexpected queues)
  kShuffled,       // sends and receives of all peers interleaved at random, each (peer, direction) in order
};

inline const char* orderName(PostOrder o) {
  switch (o) {
    case PostOrder::kReceivesFirst:
      return "receives first";
    case PostOrder::kSendsFirst:
      return "sends first";
    case PostOrder::kShuffled:
      return "shuffled";
  }
  return "?";
}

// Buffers and transfers a transport may still touch: a transport that failed, or a wait that timed out, leaves
// transfers posted, and the transport may use them until it is destroyed, after the test body has returned. They
// are kept until the process exits instead, so that a failing check fails cleanly rather than crashing.
inline void keepUntilExit(std::shared_ptr<void> p) {
  static std::mutex mutex;
  static auto* kept = new std::vector<std::shared_ptr<void>>();  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(p));
}

// Rank r sends every peer one message of each size in `sizes` and receives as many from each, all in flight at
// once, then checks every byte. Message m of the exchange carries pattern number firstMessage + m, so a message
// left over from an earlier exchange is wrong here too.
inline void exchange(Transport& t, int r, int n, const std::vector<size_t>& sizes, PostOrder order,
                     uint64_t firstMessage) {
  const size_t count = sizes.size();
  struct Posted {
    std::vector<std::vector<std::vector<uint8_t>>> sends;
    std::vector<std::vector<RecvBuffer>> recvs;
    std::vector<std::vector<Transfer>> st, rt;  // must not move while posted: sized once
  };
  auto posted = std::make_shared<Posted>();
  auto& [sends, recvs, st, rt] = *posted;
  sends.resize(n);
  recvs.resize(n);
  st.assign(n, std::vector<Transfer>(count));
  rt.assign(n, std::vector<Transfer>(count));
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    recvs[p].reserve(count);
    for (size_t m = 0; m < count; ++m) {
      sends[p].push_back(patternMessage(sizes[m], r, p, firstMessage + m));
      recvs[p].emplace_back(sizes[m], p, r, firstMessage + m);
    }
  }
  // One stream per (peer, direction); each is posted in message order, the streams are merged per `order`.
  struct Stream {
    int peer;
    bool send;
    size_t next = 0;
  };
  std::vector<Stream> streams;
  for (bool send : {false, true}) {
    for (int p = 0; p < n; ++p) {
      if (p != r) streams.push_back({p, send});
    }
  }
  std::vector<Transfer*> all;
  auto post = [&](Stream& s) {
    size_t m = s.next++;
    if (s.send) {
      t.postSend(s.peer, sends[s.peer][m].data(), sizes[m], &st[s.peer][m]);
      all.push_back(&st[s.peer][m]);
    } else {
      t.postRecv(s.peer, recvs[s.peer][m].data(), sizes[m], &rt[s.peer][m]);
      all.push_back(&rt[s.peer][m]);
    }
  };
  bool done = false;
  try {
    if (order == PostOrder::kShuffled) {
      std::mt19937 rng(static_cast<uint32_t>(1000 * r + firstMessage));
      std::vector<Stream*> open;
      for (Stream& s : streams) open.push_back(&s);
      while (!open.empty()) {
        size_t pick = rng() % open.size();
        post(*open[pick]);
        if (open[pick]->next == count) open.erase(open.begin() + static_cast<ptrdiff_t>(pick));
      }
    } else {
      bool sendsFirst = order == PostOrder::kSendsFirst;
      for (bool send : {sendsFirst, !sendsFirst}) {
        for (size_t m = 0; m < count; ++m) {
          for (Stream& s : streams) {
            if (s.send == send) post(s);
          }
        }
      }
    }
    if (count > 0 && n > 1) {
      EXPECT_TRUE(t.hasPending());
    }
    done = waitAll(t, all);
  } catch (...) {
    keepUntilExit(posted);
    throw;
  }
  if (!done) keepUntilExit(posted);
  ASSERT_TRUE(done);
  EXPECT_FALSE(t.hasPending());
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    for (size_t m = 0; m < count; ++m) {
      EXPECT_EQ(st[p][m].bytes, sizes[m]);
      EXPECT_EQ(rt[p][m].bytes, sizes[m]);
      std::string problem = recvs[p][m].problem();
      EXPECT_TRUE(problem.empty()) << "rank " << r << " (" << orderName(order) << "): message " << m << " (" << sizes[m]
                                   << " bytes) from rank " << p << ": " << problem;
    }
  }
}

// Zero bytes, odd small sizes, sizes around eager/rendezvous, chunk and registration thresholds (64 KiB, 128 KiB,
// 256 KiB), 2^20+3 and a multi-megabyte one. Runs of equal sizes: a transport that hands a message to the wrong
// receive of the same size is caught by the bytes, not by a size check.
inline const std::vector<size_t>& mixedSizes() {
  static const std::vector<size_t> sizes = {0,       1,       7,       13,      100,    1023,   1023,   1023,
                                            8191,    65539,   65539,   131040,  131072, 262143, 262144, 262144,
                                            1048579, 1048579, 1000003, 5000007, 0,      7};
  return sizes;
}

// Every size in both directions with every peer at once, under each posting order, on 2 and 3 ranks.
inline void orderedMixedSizes(const NetworkFactory& factory, const char* expectedName,
                              const std::vector<int>& rankCounts = {2, 3}) {
  for (int n : rankCounts) {
    runNetworkRanks(n, 60000, factory, [&](Transport& t, TcpTransport&, int r) {
      EXPECT_STREQ(t.name(), expectedName);
      uint64_t message = 0;
      for (PostOrder order : {PostOrder::kReceivesFirst, PostOrder::kSendsFirst, PostOrder::kShuffled}) {
        exchange(t, r, n, mixedSizes(), order, message);
        message += mixedSizes().size();
      }
    });
  }
}

// Many equal-size messages to and from two peers at once, shuffled: the k-th receive from a peer gets the k-th
// message that peer sent this rank. Small (eager) ones, then large ones that go through rendezvous or chunking.
inline void fifoMatchingOfEqualSizes(const NetworkFactory& factory) {
  runNetworkRanks(3, 60000, factory, [&](Transport& t, TcpTransport&, int r) {
    exchange(t, r, 3, std::vector<size_t>(300, 8), PostOrder::kShuffled, 0);
    exchange(t, r, 3, std::vector<size_t>(12, 300007), PostOrder::kShuffled, 300);
  });
}

// The receiver expects 200 bytes (or, striped where the transport stripes, 3000000): any other size, even one byte
// off, is a usage error on the receiver that names the peer and the expected size, never data.
inline void sizeMismatchIsAnError(const NetworkFactory& factory) {
  const std::vector<std::pair<size_t, std::vector<size_t>>> cases = {{200, {0, 100, 199, 201, 300, 3000000}},
                                                                     {3000000, {200, 2999999, 3000001, 6000000}}};
  for (const auto& [expected, sizes] : cases) {
    for (size_t sent : sizes) {
      runNetworkRanks(2, 20000, factory, [&](Transport& t, TcpTransport&, int r) {
        struct Posted {
          std::vector<uint8_t> buf;
          Transfer x;
        };
        auto posted = std::make_shared<Posted>();
        posted->buf.assign(std::max(sent, expected), 1);
        std::vector<uint8_t>& buf = posted->buf;
        Transfer& x = posted->x;
        if (r == 0) {
          t.postSend(1, buf.data(), sent, &x);
          // The sender may or may not learn of the failure (a send can complete locally); it must not hang.
          try {
            waitAll(t, {&x}, 15000);
          } catch (const Error&) {
          }
          if (!x.done) keepUntilExit(posted);
          return;
        }
        t.postRecv(0, buf.data(), expected, &x);
        keepUntilExit(posted);  // the receive fails (or a failure is reported below): the transport may keep it
        try {
          waitAll(t, {&x}, 10000);
          ADD_FAILURE() << "a " << sent << "-byte message was accepted by a " << expected << "-byte receive";
        } catch (const Error& e) {
          std::string what = e.what();
          EXPECT_EQ(e.code(), ternInvalidUsage) << what;
          EXPECT_NE(what.find("rank 0"), std::string::npos) << "the sending peer is not named: " << what;
          EXPECT_NE(what.find(std::to_string(expected) + " "), std::string::npos)
              << "the expected size is not named: " << what;
          EXPECT_FALSE(x.done) << "a failed receive was marked done";
          EXPECT_THROW(t.progress(0), Error) << "a failed transport must keep failing";
        }
      });
    }
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
      value = 0x0123456789abcdefull;
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
    EXPECT_EQ(value, 0x0123456789abcdefull);
    EXPECT_GT(wall, 1.0);
    EXPECT_LT(cpu, 0.25 * wall) << "progress() burned " << cpu << " s of CPU in " << wall << " s of waiting";
  });
}

// progress(waitMs) with nothing arriving returns (completing nothing, throwing nothing) once its wait is over, so
// callers can enforce their own deadlines; the receive stays pending and completes when the message comes.
inline void progressReturnsWhenItsWaitIsOver(const NetworkFactory& factory) {
  std::atomic<bool> release{false};
  runNetworkRanks(2, 30000, factory, [&](Transport& t, TcpTransport&, int r) {
    std::vector<uint8_t> msg = patternMessage(1023, 0, 1, 7);
    Transfer x;
    if (r == 0) {
      auto giveUp = Clock::now() + std::chrono::seconds(20);  // rank 1 failed before it released this one
      while (!release.load() && Clock::now() < giveUp) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      t.postSend(1, msg.data(), msg.size(), &x);
      waitAll(t, {&x});
      return;
    }
    RecvBuffer in(1023, 0, 1, 7);
    t.postRecv(0, in.data(), in.size(), &x);
    for (int call = 0; call < 3; ++call) {
      auto t0 = Clock::now();
      int completed = -1;
      EXPECT_NO_THROW(completed = t.progress(300));
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      EXPECT_EQ(completed, 0);
      EXPECT_LT(s, 3.0) << "progress(300) returned only after " << s << " s";
      EXPECT_FALSE(x.done);
      EXPECT_TRUE(t.hasPending());
    }
    release = true;
    ASSERT_TRUE(waitAll(t, {&x}));
    EXPECT_EQ(in.problem(), "");
  });
  release = true;
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
      while (Clock::now() - t0 < std::chrono::seconds(6)) t.progress(10000);
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

// A peer that sent its messages and left (a rank that finished its part of a collective and exited) before this rank
// read them all: every message still arrives, and the ends of the peer's connections are no error while nothing
// more is owed. Over TCP between hosts large messages are striped, so one socket ends while another still holds
// chunks of a message that is being received. The sender first tries to finish alone (a transport that buffers in
// the kernel can); one that needs its receiver (a rendezvous) is then read while it sends.
inline void finishedPeerLeavesItsMessages(const NetworkFactory& factory) {
  const std::vector<size_t> sizes = {8, 600000, 524288, 1048579, 7, 300007};
  UniqueIdData id = createTcpUniqueId();
  std::atomic<bool> needsReader{false};
  std::atomic<bool> left{false};
  std::thread peer([&] {
    try {
      NetworkRank me(id, 1, 2, 20000, factory);
      std::vector<std::vector<uint8_t>> sends;
      std::vector<Transfer> st(sizes.size());
      std::vector<Transfer*> all;
      for (size_t m = 0; m < sizes.size(); ++m) {
        sends.push_back(patternMessage(sizes[m], 1, 0, m));
        me.net->postSend(0, sends[m].data(), sizes[m], &st[m]);
        all.push_back(&st[m]);
      }
      const auto alone = Clock::now() + std::chrono::milliseconds(500);
      auto allSent = [&] { return std::all_of(st.begin(), st.end(), [](const Transfer& x) { return x.done; }); };
      while (!allSent() && Clock::now() < alone) me.net->progress(10);
      if (!allSent()) {
        needsReader = true;
        EXPECT_TRUE(waitAll(*me.net, all, 20000));
      }
      me.close();
    } catch (const Error& e) {
      ADD_FAILURE() << "rank 1: " << e.what();
    }
    left = true;
  });
  try {
    NetworkRank me(id, 0, 2, 20000, factory);
    std::vector<RecvBuffer> recvs;
    recvs.reserve(sizes.size());
    std::vector<Transfer> rt(sizes.size());
    std::vector<Transfer*> all;
    for (size_t m = 0; m < sizes.size(); ++m) {
      recvs.emplace_back(sizes[m], 1, 0, m);
      me.net->postRecv(1, recvs[m].data(), sizes[m], &rt[m]);
      all.push_back(&rt[m]);
    }
    while (!left.load()) {
      if (needsReader.load()) {
        me.net->progress(10);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    ASSERT_TRUE(waitAll(*me.net, all, 20000));
    for (size_t m = 0; m < sizes.size(); ++m) {
      std::string problem = recvs[m].problem();
      EXPECT_TRUE(problem.empty()) << "message " << m << " (" << sizes[m] << " bytes): " << problem;
    }
  } catch (const Error& e) {
    ADD_FAILURE() << "rank 0: " << e.what();
  }
  left = true;
  peer.join();
}

// A peer that disappears (transport and TCP mesh closed, as the kernel does for a killed process) while this rank
// waits for it. Waiting on a receive it never sent: an error within seconds, naming the peer. Waiting on a large
// send it never received: the send may complete (the transport may already have moved the data into the peer's
// process, as UCX does into its unexpected queue), else it fails the same way; it never hangs.
inline void vanishedPeerIsAnError(const NetworkFactory& factory) {
  const size_t kLargeSend = 4 << 20;  // more than an ibverbs ring holds: cannot complete there without the peer
  for (bool waitOnSend : {false, true}) {
    SCOPED_TRACE(waitOnSend ? "waiting on a send" : "waiting on a receive");
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
      std::vector<uint8_t> large;
      Transfer x;
      if (waitOnSend) {
        large.assign(kLargeSend, 3);
        me.net->postSend(1, large.data(), large.size(), &x);
      } else {
        me.net->postRecv(1, &value, sizeof(value), &x);
      }
      ready = true;
      auto t0 = Clock::now();
      auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
      try {
        while (!x.done && seconds() < 10.0) me.net->progress(1000);
        if (!x.done) {
          ADD_FAILURE() << "progress never failed";
        } else if (!waitOnSend) {
          ADD_FAILURE() << "the receive completed without the peer";
        }
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ternRemoteError) << e.what();
        EXPECT_LT(seconds(), 5.0) << e.what();
        EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
      }
    } catch (const Error& e) {
      ADD_FAILURE() << "rank 0: " << e.what();
    }
    ready = true;
    peer.join();
  }
}

// A peer that joins the TCP mesh but never builds its side of the transport: creating the transport fails at the
// deadline with a timeout naming this rank and TERN_TIMEOUT, instead of waiting forever.
inline void setupTimesOutWhenAPeerNeverConnects(const NetworkFactory& factory) {
  const int kTimeoutMs = 1500;
  UniqueIdData id = createTcpUniqueId();
  std::atomic<bool> done{false};
  std::thread peer([&] {
    try {
      NetworkRank me(id, 1, 2, 20000, [&](const NetworkSetup&) -> std::unique_ptr<Transport> {
        while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return nullptr;
      });
    } catch (const Error& e) {
      ADD_FAILURE() << "rank 1: " << e.what();
    }
  });
  auto t0 = Clock::now();
  try {
    NetworkRank me(id, 0, 2, kTimeoutMs, factory);
    ADD_FAILURE() << "the transport connected to a peer that never set it up";
  } catch (const Error& e) {
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::string what = e.what();
    EXPECT_EQ(e.code(), ternTimeout) << what;
    EXPECT_NE(what.find("rank 0"), std::string::npos) << what;
    EXPECT_NE(what.find("TERN_TIMEOUT"), std::string::npos) << what;
    EXPECT_LT(s, kTimeoutMs / 1000.0 + 3.0) << "gave up only after " << s << " s: " << what;
  }
  done = true;
  peer.join();
}

}  // namespace tern::testing::conformance
