// Trust on the wire: the bootstrap and the TCP peer handshakes against fakes written here, over real loopback
// sockets. A fake root or fake peer that does not know the job secret is refused with an authentication error naming
// its address and receives nothing but a hello; a stranger joining the root or a rank's listener gets no table and
// is dropped; the secret's bytes never appear in what the fakes receive; strangers that connect and stay silent or
// send garbage do not delay a 4-rank init.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/auth.hpp"
#include "base/error.hpp"
#include "base/host_id.hpp"
#include "base/socket.hpp"
#include "base/unique_id.hpp"
#include "tern/tern.h"
#include "transport/bootstrap.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern {
namespace {

namespace bw = bootstrap_wire;
using std::chrono::milliseconds;

// A plain blocking client socket with receive timeouts, as an attacker's script would open.
Fd rawConnect(const SocketAddress& addr) {
  Fd fd(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd || ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.length) != 0) return Fd();
  timeval tv{3, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

bool sendAll(int fd, const void* data, size_t bytes) {
  return ::send(fd, data, bytes, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes);
}

// Reads exactly bytes (false on EOF, error or the 3 s timeout); appends them to *capture.
bool recvAll(int fd, void* data, size_t bytes, std::string* capture) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::recv(fd, p + got, bytes - got, 0);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  capture->append(p, bytes);
  return true;
}

// Everything until the other side closes (or 3 s of silence).
std::string drain(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

bool closedByPeer(int fd) {
  char byte;
  return ::recv(fd, &byte, 1, 0) == 0;
}

void expectSecretAbsent(const std::string& captured, const Secret& secret) {
  const std::string raw(reinterpret_cast<const char*>(secret.bytes), sizeof(secret.bytes));
  EXPECT_EQ(captured.find(raw), std::string::npos) << "the secret's bytes went on the wire";
  std::string hex = secret.hex();
  EXPECT_EQ(captured.find(hex), std::string::npos) << "the secret's hex went on the wire";
  for (char& c : hex) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(captured.find(hex), std::string::npos);
}

struct FakeListener {
  Fd fd;
  SocketAddress address;
  FakeListener() { fd = listenOn(SocketAddress::parse("127.0.0.1:0"), &address); }
  Fd acceptOne() const { return Fd(::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC)); }
};

template <class T>
T randomBytes() {
  T t;
  fillRandom(&t, sizeof(t));
  return t;
}

ternConfig_t configWithTimeout(int ms) {
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = ms;
  return config;
}

// Initializes ranks 0..n-1 of id in threads, checks one allreduce, destroys them; returns the slowest init.
double initAndCheck(int n, const ternUniqueId& id) {
  std::vector<ternComm_t> comms(n, nullptr);
  std::vector<double> seconds(n, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ternConfig_t config = configWithTimeout(20000);
      auto start = Clock::now();
      ternResult_t result = ternCommInitRankConfig(&comms[r], n, id, r, &config);
      seconds[r] = std::chrono::duration<double>(Clock::now() - start).count();
      EXPECT_EQ(result, ternSuccess) << ternGetLastError(nullptr);
      if (result != ternSuccess) return;
      int v = r + 1;
      EXPECT_EQ(ternAllReduce(&v, &v, 1, ternInt32, ternSum, comms[r]), ternSuccess);
      EXPECT_EQ(v, n * (n + 1) / 2);
    });
  }
  for (auto& t : threads) t.join();
  for (auto c : comms) ternCommDestroy(c);
  double slowest = 0;
  for (double s : seconds) slowest = std::max(slowest, s);
  return slowest;
}

TEST(Auth, ProofsDependOnTheSecretTheLabelAndEveryPart) {
  Secret a = Secret::random(), b = a;
  b.bytes[15] ^= 1;
  Nonce n1 = freshNonce(), n2 = freshNonce();
  EXPECT_NE(n1, n2);
  Mac base = MacBuilder(a, "label").addValue(n1).addValue(n2).finish();
  EXPECT_TRUE(macEqual(base, MacBuilder(a, "label").addValue(n1).addValue(n2).finish()));
  EXPECT_FALSE(macEqual(base, MacBuilder(b, "label").addValue(n1).addValue(n2).finish()));
  EXPECT_FALSE(macEqual(base, MacBuilder(a, "label2").addValue(n1).addValue(n2).finish()));
  EXPECT_FALSE(macEqual(base, MacBuilder(a, "label").addValue(n2).addValue(n1).finish()));
  // Parts are length-prefixed: moving a byte from one part to the next changes the proof.
  const char ab[] = "ab";
  EXPECT_FALSE(macEqual(MacBuilder(a, "l").add(ab, 1).add(ab + 1, 1).finish(), MacBuilder(a, "l").add(ab, 2).finish()));
  // The two directions of one handshake never prove the same thing.
  EXPECT_FALSE(macEqual(bw::rootProof(a, n1, n2), bw::joinProof(a, n1, n2, bw::Join())));
}

// A fake root that answers the hello with a made-up proof: the rank stops, names the address, sends nothing more.
TEST(FakeRoot, ARankRefusesARootThatCannotProveTheSecret) {
  FakeListener fake;
  std::string captured;
  std::thread root([&] {
    Fd c = fake.acceptOne();
    bw::Hello hello;
    ASSERT_TRUE(recvAll(c.get(), &hello, sizeof(hello), &captured));
    bw::Challenge challenge;
    challenge.nonce = freshNonce();
    challenge.proof = randomBytes<Mac>();
    ASSERT_TRUE(sendAll(c.get(), &challenge, sizeof(challenge)));
    captured += drain(c.get());
  });
  UniqueIdData id;
  id.kind = RendezvousKind::kTcp;
  id.secret = Secret::random();
  id.setRootAddress(fake.address);
  ternConfig_t config = configWithTimeout(5000);
  ternComm_t comm = nullptr;
  EXPECT_EQ(ternCommInitRankConfig(&comm, 2, id.pack(), 1, &config), ternRemoteError);
  std::string error = ternGetLastError(nullptr);
  root.join();
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(error.find("authentication failed"), std::string::npos) << error;
  EXPECT_NE(error.find(fake.address.toString()), std::string::npos) << error;
  EXPECT_EQ(captured.size(), sizeof(bw::Hello)) << "the fake root learned more than a hello";
  expectSecretAbsent(captured, id.secret);
}

// A real tern root of another job (another secret) is refused the same way.
TEST(FakeRoot, ARootWithAnotherSecretIsRefused) {
  ternUniqueId other;
  ASSERT_EQ(ternGetUniqueId(&other), ternSuccess);
  UniqueIdData id = UniqueIdData::unpack(other);
  id.secret.bytes[0] ^= 0x5a;
  ternConfig_t config = configWithTimeout(5000);
  ternComm_t comm = nullptr;
  EXPECT_EQ(ternCommInitRankConfig(&comm, 2, id.pack(), 1, &config), ternRemoteError);
  std::string error = ternGetLastError(nullptr);
  EXPECT_NE(error.find("authentication failed"), std::string::npos) << error;
  EXPECT_NE(error.find(id.rootAddress().toString()), std::string::npos) << error;
}

// A fake root that does know the secret (a bug in a real root, or a corrupted reply) cannot make a rank read past
// the reply's 200-byte message or accept a status code that does not exist.
TEST(FakeRoot, ARefusalIsReadWithinItsBounds) {
  for (int code : {static_cast<int>(ternInvalidArgument), 77, -3}) {
    FakeListener fake;
    UniqueIdData id;
    id.kind = RendezvousKind::kTcp;
    id.secret = Secret::random();
    id.setRootAddress(fake.address);
    std::thread root([&] {
      std::string ignored;
      Fd c = fake.acceptOne();
      bw::Hello hello;
      ASSERT_TRUE(recvAll(c.get(), &hello, sizeof(hello), &ignored));
      bw::Challenge challenge;
      challenge.nonce = freshNonce();
      challenge.proof = bw::rootProof(id.secret, hello.nonce, challenge.nonce);
      ASSERT_TRUE(sendAll(c.get(), &challenge, sizeof(challenge)));
      bw::Join join;
      ASSERT_TRUE(recvAll(c.get(), &join, sizeof(join), &ignored));
      bw::Status status;
      status.status = code;
      std::memset(status.message, 'A', sizeof(status.message));  // no terminator
      status.proof = bw::statusProof(id.secret, hello.nonce, challenge.nonce, status);
      ASSERT_TRUE(sendAll(c.get(), &status, sizeof(status)));
      drain(c.get());
    });
    ternConfig_t config = configWithTimeout(5000);
    ternComm_t comm = nullptr;
    ternResult_t result = ternCommInitRankConfig(&comm, 2, id.pack(), 1, &config);
    std::string error = ternGetLastError(nullptr);
    root.join();
    EXPECT_EQ(result, code == ternInvalidArgument ? ternInvalidArgument : ternRemoteError) << error;
    EXPECT_NE(error.find(std::string(bw::kMessageBytes, 'A')), std::string::npos) << error;
    EXPECT_EQ(error.find(std::string(bw::kMessageBytes + 1, 'A')), std::string::npos) << error;
    if (code != ternInvalidArgument) {
      EXPECT_NE(error.find("unknown status"), std::string::npos) << error;
    }
  }
}

// A stranger at the real root: it gets the root's challenge (which tells it nothing), its made-up proof is refused
// and the connection closed without a table; the job then forms as usual.
TEST(FakeRank, TheRootSendsNoTableToARankWithoutTheSecret) {
  ternUniqueId uid;
  ASSERT_EQ(ternGetUniqueId(&uid), ternSuccess);
  UniqueIdData id = UniqueIdData::unpack(uid);
  Fd c = rawConnect(id.rootAddress());
  ASSERT_TRUE(c);
  std::string captured;
  bw::Hello hello;
  hello.nonce = freshNonce();
  ASSERT_TRUE(sendAll(c.get(), &hello, sizeof(hello)));
  bw::Challenge challenge;
  ASSERT_TRUE(recvAll(c.get(), &challenge, sizeof(challenge), &captured));
  bw::Join join;
  join.rank = 1;
  join.nranks = 2;
  join.listener.set(SocketAddress::parse("127.0.0.1:9"));
  join.proof = randomBytes<Mac>();
  ASSERT_TRUE(sendAll(c.get(), &join, sizeof(join)));
  captured += drain(c.get());
  EXPECT_EQ(captured.size(), sizeof(bw::Challenge)) << "the root answered a stranger's join";
  expectSecretAbsent(captured, id.secret);
  initAndCheck(2, uid);
}

// Joins with fields out of range (nranks < 0 used to make the root thread call std::terminate) are refused with a
// reason the rank can read; the root lives on and the job forms.
TEST(FakeRank, JoinsWithBadFieldsAreRefusedAndTheRootSurvives) {
  ternUniqueId uid;
  ASSERT_EQ(ternGetUniqueId(&uid), ternSuccess);
  UniqueIdData id = UniqueIdData::unpack(uid);
  struct Case {
    int rank, nranks;
    const char* why;
  };
  for (Case k : {Case{0, -1, "out of range"}, Case{0, bw::kMaxRanks + 1, "out of range"}, Case{5, 2, "does not fit"},
                 Case{-1, 2, "does not fit"}}) {
    Fd c = rawConnect(id.rootAddress());
    ASSERT_TRUE(c);
    std::string ignored;
    bw::Hello hello;
    hello.nonce = freshNonce();
    ASSERT_TRUE(sendAll(c.get(), &hello, sizeof(hello)));
    bw::Challenge challenge;
    ASSERT_TRUE(recvAll(c.get(), &challenge, sizeof(challenge), &ignored));
    ASSERT_TRUE(macEqual(challenge.proof, bw::rootProof(id.secret, hello.nonce, challenge.nonce)));
    bw::Join join;
    join.rank = k.rank;
    join.nranks = k.nranks;
    join.listener.set(SocketAddress::parse("127.0.0.1:9"));
    join.proof = bw::joinProof(id.secret, hello.nonce, challenge.nonce, join);
    ASSERT_TRUE(sendAll(c.get(), &join, sizeof(join)));
    bw::Status status;
    ASSERT_TRUE(recvAll(c.get(), &status, sizeof(status), &ignored)) << k.rank << "/" << k.nranks;
    EXPECT_EQ(status.status, ternInvalidArgument);
    EXPECT_TRUE(macEqual(status.proof, bw::statusProof(id.secret, hello.nonce, challenge.nonce, status)));
    std::string message(status.message, strnlen(status.message, sizeof(status.message)));
    EXPECT_LT(message.size(), sizeof(status.message));
    EXPECT_NE(message.find(k.why), std::string::npos) << message;
    EXPECT_TRUE(closedByPeer(c.get()));
  }
  initAndCheck(2, uid);
}

// Two ranks through a real bootstrap, stopped before their peer connections.
struct TwoBootstrapped {
  UniqueIdData id;
  BootstrapResult boot[2];
  TwoBootstrapped() {
    ternUniqueId uid;
    EXPECT_EQ(ternGetUniqueId(&uid), ternSuccess);
    id = UniqueIdData::unpack(uid);
    auto deadline = Clock::now() + std::chrono::seconds(10);
    std::thread t([&] { boot[1] = joinBootstrap(id, 1, 2, hostId(), deadline, nullptr); });
    boot[0] = joinBootstrap(id, 0, 2, hostId(), deadline, nullptr);
    t.join();
  }
};

// A stranger at a rank's peer listener claiming to be rank 0: challenged, refused, closed without an Accept; the
// real rank 0 then connects.
TEST(FakePeer, AnAcceptorRefusesAStrangerClaimingARank) {
  TwoBootstrapped job;
  EXPECT_NE(job.boot[0].jobId, JobId{});
  EXPECT_EQ(job.boot[0].jobId, job.boot[1].jobId);
  std::string captured;
  Fd c = rawConnect(job.boot[0].peers[1].address);
  ASSERT_TRUE(c);
  tcp_wire::Hello hello;
  hello.fromRank = 0;
  hello.toRank = 1;
  hello.socketIndex = 0;
  hello.nonce = freshNonce();
  ASSERT_TRUE(sendAll(c.get(), &hello, sizeof(hello)));
  auto deadline = Clock::now() + std::chrono::seconds(10);
  std::unique_ptr<TcpTransport> t1;
  std::thread acceptor([&] { t1 = TcpTransport::connect(1, 2, job.boot[1], job.id.secret, 1, deadline, nullptr); });
  tcp_wire::Challenge challenge;
  ASSERT_TRUE(recvAll(c.get(), &challenge, sizeof(challenge), &captured));
  tcp_wire::Proof proof;
  proof.proof = randomBytes<Mac>();
  ASSERT_TRUE(sendAll(c.get(), &proof, sizeof(proof)));
  captured += drain(c.get());
  EXPECT_EQ(captured.size(), sizeof(tcp_wire::Challenge)) << "the acceptor accepted a stranger";
  expectSecretAbsent(captured, job.id.secret);
  auto t0 = TcpTransport::connect(0, 2, job.boot[0], job.id.secret, 1, deadline, nullptr);
  acceptor.join();
  ASSERT_TRUE(t1 != nullptr);
}

// A fake acceptor where rank 1 should be: rank 0 refuses it, naming the address, after sending only its hello.
TEST(FakePeer, AnInitiatorRefusesAFakeAcceptor) {
  TwoBootstrapped job;
  FakeListener fake;
  job.boot[0].peers[1].address = fake.address;
  std::string captured;
  std::thread acceptor([&] {
    Fd c = fake.acceptOne();
    tcp_wire::Hello hello;
    ASSERT_TRUE(recvAll(c.get(), &hello, sizeof(hello), &captured));
    tcp_wire::Challenge challenge;
    challenge.nonce = freshNonce();
    challenge.proof = randomBytes<Mac>();
    ASSERT_TRUE(sendAll(c.get(), &challenge, sizeof(challenge)));
    captured += drain(c.get());
  });
  auto deadline = Clock::now() + std::chrono::seconds(10);
  try {
    TcpTransport::connect(0, 2, job.boot[0], job.id.secret, 1, deadline, nullptr);
    ADD_FAILURE() << "rank 0 connected to a fake acceptor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternRemoteError);
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fake.address.toString()), std::string::npos) << e.what();
  }
  acceptor.join();
  EXPECT_EQ(captured.size(), sizeof(tcp_wire::Hello));
  expectSecretAbsent(captured, job.id.secret);
}

// Strangers: `silent` connections that never send, and as many that send garbage (random bytes, or a well-formed
// hello and then nothing, which parks them in the middle of a handshake).
class Strangers {
 public:
  void flood(const SocketAddress& addr, int silent, int garbage, int claimedRank = 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::mt19937 rng(static_cast<unsigned>(addr.port()));
    for (int i = 0; i < silent; ++i) keep(rawConnect(addr));
    for (int i = 0; i < garbage; ++i) {
      Fd c = rawConnect(addr);
      if (!c) continue;
      if (i % 3 == 0) {
        bw::Hello hello;
        hello.nonce = freshNonce();
        sendAll(c.get(), &hello, sizeof(hello));
      } else if (i % 3 == 1) {
        tcp_wire::Hello hello;
        hello.fromRank = 0;
        hello.toRank = claimedRank;
        hello.socketIndex = 0;
        sendAll(c.get(), &hello, sizeof(hello));
      } else {
        std::string junk(1 + rng() % 300, '\0');
        for (char& ch : junk) ch = static_cast<char>(rng());
        sendAll(c.get(), junk.data(), junk.size());
      }
      keep(std::move(c));
    }
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return fds_.size();
  }

 private:
  void keep(Fd fd) {
    if (fd) fds_.push_back(std::move(fd));
  }
  std::mutex mutex_;
  std::vector<Fd> fds_;
};

void raiseFdLimit() {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
}

// 4 ranks: bootstrap and peer connections, with the strangers (if any) at the root before the ranks start, at each
// rank's listener before its peers connect, and more at every listener while they do. Returns the slowest rank's
// time spent in its own init steps (not waiting for the strangers to be placed).
double fourRankInit(Strangers* strangers) {
  constexpr int n = 4;
  ternUniqueId uid;
  EXPECT_EQ(ternGetUniqueId(&uid), ternSuccess);
  UniqueIdData id = UniqueIdData::unpack(uid);
  if (strangers != nullptr) strangers->flood(id.rootAddress(), 64, 64);
  std::vector<BootstrapResult> boot(n);
  std::vector<double> seconds(n, 0);
  std::atomic<int> joined{0};
  std::atomic<bool> flooded{false};
  std::atomic<bool> connecting{true};
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      auto start = Clock::now();
      auto deadline = start + std::chrono::seconds(30);
      try {
        boot[r] = joinBootstrap(id, r, n, hostId(), deadline, nullptr);
        seconds[r] = std::chrono::duration<double>(Clock::now() - start).count();
        ++joined;
        while (!flooded) std::this_thread::sleep_for(milliseconds(1));
        start = Clock::now();
        auto t = TcpTransport::connect(r, n, boot[r], id.secret, 2, start + std::chrono::seconds(30), nullptr);
        seconds[r] += std::chrono::duration<double>(Clock::now() - start).count();
      } catch (const Error& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  }
  while (joined < n) std::this_thread::sleep_for(milliseconds(1));
  std::thread during;
  if (strangers != nullptr) {
    for (int r = 0; r < n; ++r) strangers->flood(boot[r].peers[r].address, 64, 64, r);
    during = std::thread([&] {
      for (int round = 0; round < 4 && connecting; ++round) {
        for (int r = 0; r < n; ++r) strangers->flood(boot[0].peers[r].address, 4, 4, r);
      }
    });
  }
  flooded = true;
  for (auto& t : ranks) t.join();
  connecting = false;
  if (during.joinable()) during.join();
  double slowest = 0;
  for (double s : seconds) slowest = std::max(slowest, s);
  return slowest;
}

TEST(Stall, StrangersAtTheRootAndEveryListenerDoNotDelayA4RankInit) {
  raiseFdLimit();
  const double normal = fourRankInit(nullptr);
  Strangers strangers;
  const double attacked = fourRankInit(&strangers);
  std::printf("4-rank init (bootstrap + peer handshakes): %.3f s alone, %.3f s with %zu strangers connected\n", normal,
              attacked, strangers.count());
  RecordProperty("normal_ms", static_cast<int>(normal * 1000));
  RecordProperty("attacked_ms", static_cast<int>(attacked * 1000));
  EXPECT_GE(strangers.count(), 5u * 128u);
  EXPECT_LT(attacked, normal + 2.0);
}

// Through the public API, with more strangers at the root than it keeps at once (the oldest are dropped to make
// room): the ranks still join and compute.
TEST(Stall, MoreStrangersThanTheRootKeepsDoNotStopInit) {
  raiseFdLimit();
  ternUniqueId quiet;
  ASSERT_EQ(ternGetUniqueId(&quiet), ternSuccess);
  const double normal = initAndCheck(4, quiet);
  ternUniqueId uid;
  ASSERT_EQ(ternGetUniqueId(&uid), ternSuccess);
  Strangers strangers;
  strangers.flood(UniqueIdData::unpack(uid).rootAddress(), static_cast<int>(kMaxStrangers) + 64, 64);
  const double attacked = initAndCheck(4, uid);
  std::printf("4-rank ternCommInitRank: %.3f s alone, %.3f s with %zu strangers at the root\n", normal, attacked,
              strangers.count());
  EXPECT_LT(attacked, normal + 2.0);
}

}  // namespace
}  // namespace tern
