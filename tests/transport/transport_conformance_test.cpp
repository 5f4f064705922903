// The transport conformance checks (transport_conformance.hpp) over the transports every build has: inproc, TCP
// (one socket between ranks of one host, and striped over several sockets between ranks that report distinct hosts,
// the two ways the TCP mesh moves a message) and shared memory (rendezvous on, and every message through the ring).
// The UCX and ibverbs tests (tests/ucx, tests/ibverbs) run the same checks over their transports. That the checks
// can fail is shown here over TCP broken on purpose (faulty_transport.hpp), in every build (tests/ucx shows it over
// UCX where UCX is built).
//
// Ranks are threads over loopback, built as network_mesh.hpp builds them: a TCP mesh first, then the transport under
// test on top of it (the TCP mesh itself, for TCP). A check that cannot apply to a transport is skipped with the
// reason, never passed.
#include "transport_conformance.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "conformance_can_fail.hpp"
#include "faulty_transport.hpp"
#include "network_mesh.hpp"
#include "transport/inproc/inproc_transport.hpp"
#include "transport/shm/intra_node_setup.hpp"
#include "transport/shm/mesh.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/shm/watchdog.hpp"
#include "transport/spin_policy.hpp"

namespace tern {
namespace {

using testing::expectCaught;
using testing::failuresOf;
using testing::Fault;
using testing::MeshShape;
using testing::NetworkFactory;
namespace conformance = testing::conformance;

// The TCP mesh a rank already has, handed to the checks as its transport; the mesh itself stays with the rank (and
// is closed after this view, as the checks expect of a transport and its mesh).
class BorrowedTransport : public Transport {
 public:
  explicit BorrowedTransport(Transport& inner) : inner_(inner) {}
  const char* name() const override { return inner_.name(); }
  int progress(int waitMs) override { return inner_.progress(waitMs); }
  void abort(const std::string& reason) override { inner_.abort(reason); }
  bool hasPending() const override { return inner_.hasPending(); }
  bool sameHost(int peer) const override { return inner_.sameHost(peer); }

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* transfer) override {
    inner_.postSend(peer, src, transfer);
  }
  void startRecv(int peer, const MemRef& dst, Transfer* transfer) override { inner_.postRecv(peer, dst, transfer); }

 private:
  Transport& inner_;
};

// The shared-memory transport with what it stands on, built as the intra-node path builds it
// (src/algorithms/shm/intra_node.cpp): the segment mesh (handshake over the TCP mesh), its watchdog, the spin policy.
class OwnedShmTransport : public Transport {
 public:
  OwnedShmTransport(const NetworkSetup& s, const UniqueIdData& id) {
    IntraNodeSetup setup;
    setup.rank = s.rank;
    setup.nranks = s.nranks;
    setup.hostIds.assign(static_cast<size_t>(s.nranks), hostId());  // threads of one process: one host
    setup.secret = id.secret;
    setup.timeoutMs = s.timeoutMs;
    setup.tcp = s.tcp;
    setup.abortFlag = s.abortFlag;
    mesh_ = shm::Mesh::create(setup);
    if (!mesh_) throw Error(ternInternalError, "shm: no shared-memory mesh between ranks of one process");
    dog_ = std::make_unique<shm::Watchdog>(mesh_.get(), s.tcp, s.timeoutMs);
    spin_ = spinPolicyFor(mesh_->ranksOwnCpus());
    shm_ = std::make_unique<shm::ShmTransport>(mesh_.get(), dog_.get(), spin_);
  }
  ~OwnedShmTransport() override {  // the transport, then its watchdog, then the segments they point into
    shm_.reset();
    dog_.reset();
    mesh_.reset();
  }

  const char* name() const override { return shm_->name(); }
  int progress(int waitMs) override { return shm_->progress(waitMs); }
  void abort(const std::string& reason) override { shm_->abort(reason); }
  bool hasPending() const override { return shm_->hasPending(); }
  bool sameHost(int peer) const override { return shm_->sameHost(peer); }

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* transfer) override { shm_->postSend(peer, src, transfer); }
  void startRecv(int peer, const MemRef& dst, Transfer* transfer) override { shm_->postRecv(peer, dst, transfer); }

 private:
  std::unique_ptr<shm::Mesh> mesh_;
  std::unique_ptr<shm::Watchdog> dog_;
  SpinPolicy spin_;
  std::unique_ptr<shm::ShmTransport> shm_;
};

// How a transport meets "a peer that never sets up its side".
enum class SetupCheck {
  kNetwork,        // the transport is built on the TCP mesh: the shared check (the peer never builds it)
  kTcpMesh,        // the transport is the TCP mesh: the peer joins the bootstrap and never connects
  kNotApplicable,  // skipped, with the reason in Subject::noSetupPhase
};

struct Subject {
  Subject(std::string l, const char* n, NetworkFactory f, SetupCheck s)
      : label(std::move(l)), name(n), factory(std::move(f)), setup(s) {}
  std::string label;  // the test name's suffix
  const char* name;   // what Transport::name() says
  NetworkFactory factory;
  SetupCheck setup;
  std::string noSetupPhase;  // why setup cannot time out (SetupCheck::kNotApplicable)
  std::string noVanishing;   // non-empty: why a peer cannot vanish under this transport
  bool shmRingOnly = false;  // shared memory with rendezvous off: long messages go through the ring too
};

// What gtest prints for a test's parameter.
void PrintTo(const Subject& s, std::ostream* os) { *os << s.label; }

NetworkFactory inprocFactory() {
  return NetworkFactory::withJob([](const NetworkSetup& s, const UniqueIdData& id) -> std::unique_ptr<Transport> {
    return InprocTransport::join(id.secret, s.rank, s.nranks);
  });
}

NetworkFactory tcpFactory(MeshShape shape) {
  return NetworkFactory::withJob(
      [](const NetworkSetup& s, const UniqueIdData&) -> std::unique_ptr<Transport> {
        return std::make_unique<BorrowedTransport>(*s.tcp);
      },
      shape);
}

NetworkFactory shmFactory() {
  return NetworkFactory::withJob([](const NetworkSetup& s, const UniqueIdData& id) -> std::unique_ptr<Transport> {
    return std::make_unique<OwnedShmTransport>(s, id);
  });
}

std::vector<Subject> subjects() {
  std::vector<Subject> out;
  Subject inproc("inproc", "inproc", inprocFactory(), SetupCheck::kNotApplicable);
  inproc.noSetupPhase =
      "inproc has no connection phase: a rank joins the process-wide group at once, without waiting for its peers";
  inproc.noVanishing = "inproc ranks are threads of one process: a peer cannot vanish without taking this rank with it";
  out.push_back(inproc);

  out.emplace_back("tcp", "tcp", tcpFactory(MeshShape{}), SetupCheck::kTcpMesh);
  // Several sockets per peer and peers on "other hosts": messages from 256 KiB on are striped across the sockets.
  out.emplace_back("tcp_striped", "tcp", tcpFactory(MeshShape{3, true}), SetupCheck::kTcpMesh);

  out.emplace_back("shm", "shm", shmFactory(), SetupCheck::kNetwork);
  Subject ring("shm_ring", "shm", shmFactory(), SetupCheck::kNetwork);
  ring.shmRingOnly = true;
  out.push_back(ring);
  return out;
}

// A rank that joins the job's bootstrap but never connects its TCP mesh: the other rank's connect fails at the
// deadline with a timeout naming itself and TERN_TIMEOUT.
void tcpSetupTimesOutWhenAPeerNeverConnects(const MeshShape& shape) {
  const int kTimeoutMs = 1500;
  UniqueIdData id = createTcpUniqueId();
  auto hostOf = [&](int rank) {
    return shape.ranksOnDistinctHosts ? "rank" + std::to_string(rank) + "." + hostId() : hostId();
  };
  std::atomic<bool> done{false};
  std::thread peer([&] {
    try {
      BootstrapResult boot = joinBootstrap(id, 1, 2, hostOf(1), Clock::now() + std::chrono::seconds(20), nullptr);
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const Error& e) {
      ADD_FAILURE() << "rank 1: " << e.what();
    }
  });
  auto t0 = Clock::now();
  try {
    auto deadline = t0 + std::chrono::milliseconds(kTimeoutMs);
    BootstrapResult boot = joinBootstrap(id, 0, 2, hostOf(0), deadline, nullptr);
    auto tcp = TcpTransport::connect(0, 2, boot, id.secret, shape.socketsPerPeer, deadline, nullptr);
    ADD_FAILURE() << "the TCP mesh connected to a peer that never connected";
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

class TransportConformance : public ::testing::TestWithParam<Subject> {
 protected:
  void SetUp() override { shm::ShmTransport::setRendezvousForTesting(!GetParam().shmRingOnly); }
  void TearDown() override { shm::ShmTransport::setRendezvousForTesting(true); }
  const NetworkFactory& factory() const { return GetParam().factory; }
};

TEST_P(TransportConformance, OrderedMixedSizesBothDirections) {
  conformance::orderedMixedSizes(factory(), GetParam().name);
}
TEST_P(TransportConformance, FifoMatchingOfEqualSizes) { conformance::fifoMatchingOfEqualSizes(factory()); }
TEST_P(TransportConformance, SizeMismatchIsAnError) { conformance::sizeMismatchIsAnError(factory()); }
TEST_P(TransportConformance, ProgressSleepsWhileWaiting) { conformance::progressSleepsWhileWaiting(factory()); }
TEST_P(TransportConformance, ProgressReturnsWhenItsWaitIsOver) {
  conformance::progressReturnsWhenItsWaitIsOver(factory());
}
TEST_P(TransportConformance, AbortFromAnotherThreadWakesAndPropagates) {
  conformance::abortFromAnotherThread(factory());
}
TEST_P(TransportConformance, VanishedPeerIsAnError) {
  if (!GetParam().noVanishing.empty()) GTEST_SKIP() << GetParam().noVanishing;
  conformance::vanishedPeerIsAnError(factory());
}
TEST_P(TransportConformance, FinishedPeerLeavesItsMessages) { conformance::finishedPeerLeavesItsMessages(factory()); }
TEST_P(TransportConformance, SetupTimesOutWhenAPeerNeverConnects) {
  switch (GetParam().setup) {
    case SetupCheck::kNetwork:
      conformance::setupTimesOutWhenAPeerNeverConnects(factory());
      break;
    case SetupCheck::kTcpMesh:
      tcpSetupTimesOutWhenAPeerNeverConnects(factory().shape());
      break;
    case SetupCheck::kNotApplicable:
      GTEST_SKIP() << GetParam().noSetupPhase;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportConformance, ::testing::ValuesIn(subjects()),
                         [](const ::testing::TestParamInfo<Subject>& info) { return info.param.label; });

// ---- The checks can fail ------------------------------------------------------------------------------------------

// Every fault of faulty_transport.hpp but a spinning progress(): its check measures this thread's CPU time, and on an
// oversubscribed machine (make test runs tests side by side) a spinning thread can get less of a core than the
// check's bound, so a drill of it here could pass by chance. tests/ucx drills it.

NetworkFactory tcpWith(Fault fault) {
  return NetworkFactory::withJob([fault](const NetworkSetup& s, const UniqueIdData&) -> std::unique_ptr<Transport> {
    return std::make_unique<testing::FaultyTransport>(std::make_unique<BorrowedTransport>(*s.tcp), fault);
  });
}

auto mixedOnTwoRanks = [](const NetworkFactory& f) { conformance::orderedMixedSizes(f, "tcp", {2}); };

TEST(TcpConformanceCanFail, PassThroughWithoutFaultPasses) {
  auto failures = failuresOf([] {
    mixedOnTwoRanks(tcpWith(Fault::kNone));
    conformance::fifoMatchingOfEqualSizes(tcpWith(Fault::kNone));
    conformance::sizeMismatchIsAnError(tcpWith(Fault::kNone));
  });
  EXPECT_TRUE(failures.empty()) << failures.size() << " failure(s), the first: " << failures.front();
}

TEST(TcpConformanceCanFail, DroppedLastByte) {
  expectCaught(Fault::kDropLastByte, tcpWith(Fault::kDropLastByte), mixedOnTwoRanks, "the last byte");
}

TEST(TcpConformanceCanFail, SwappedDeliveries) {
  const Fault f = Fault::kSwapEqualSizeNeighbours;
  expectCaught(f, tcpWith(f), conformance::fifoMatchingOfEqualSizes, "wrong at byte 0");
  expectCaught(f, tcpWith(f), mixedOnTwoRanks, "message 16 (1048579 bytes) from rank");
}

TEST(TcpConformanceCanFail, OneBitFlippedInTheMiddleOfALargeMessage) {
  const Fault f = Fault::kFlipBitInLargeMessage;
  expectCaught(f, tcpWith(f), mixedOnTwoRanks, "wrong at byte 524289 (1 of 1048579 bytes wrong");
}

TEST(TcpConformanceCanFail, WritePastTheEnd) {
  expectCaught(Fault::kOverrunByOne, tcpWith(Fault::kOverrunByOne), mixedOnTwoRanks, "written past its end");
}

TEST(TcpConformanceCanFail, SwallowedErrors) {
  const Fault f = Fault::kSwallowErrors;
  expectCaught(f, tcpWith(f), conformance::sizeMismatchIsAnError, "was accepted by a 200-byte receive");
  expectCaught(f, tcpWith(f), conformance::vanishedPeerIsAnError, "the receive completed without the peer");
}

}  // namespace
}  // namespace tern
