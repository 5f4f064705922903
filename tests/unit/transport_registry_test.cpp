// The transport registry (issue 16): one table of transports, each with its factory and its "can this pair
// connect, for this memory kind"; TERN_TRANSPORT picks the network entry, and every peer is routed to the first
// transport that reaches it.
#include "transport/transport_registry.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace tern {
namespace {

TEST(TransportRegistry, ListsEveryTransportOnce) {
  std::set<std::string> names;
  for (const TransportEntry& e : transportCatalogue()) {
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate " << e.name;
    EXPECT_NE(e.canConnect, nullptr) << e.name;
    EXPECT_NE(e.built, nullptr) << e.name;
    EXPECT_GT(std::string(e.madeBy).size(), 0u) << e.name;
    // A network transport other than the TCP mesh is made over the mesh by its factory.
    if (e.network && std::string(e.name) != "tcp") {
      EXPECT_NE(e.create, nullptr) << e.name;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"tcp", "ucx", "ibverbs", "shm", "inproc"}));
  EXPECT_EQ(findTransport("ucx")->built(), ucxAvailable());
  EXPECT_EQ(findTransport("ibverbs")->built(), ibverbsAvailable());
  EXPECT_TRUE(findTransport("tcp")->built());
  EXPECT_EQ(findTransport("nccl"), nullptr);
}

TEST(TransportRegistry, TernTransportNamesANetworkEntry) {
  EXPECT_STREQ(networkTransportNamed("").name, "tcp");
  EXPECT_STREQ(networkTransportNamed("tcp").name, "tcp");
  EXPECT_STREQ(networkTransportNamed("ucx").name, "ucx");
  EXPECT_STREQ(networkTransportNamed("ibverbs").name, "ibverbs");
  try {
    networkTransportNamed("infiniband");
    FAIL() << "an unknown transport was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidArgument);
    EXPECT_STREQ(e.what(),
                 "TERN_TRANSPORT=infiniband: expected one of tcp, ucx, ibverbs (inproc is chosen by the unique id)");
  }
  try {
    networkTransportNamed("shm");
    FAIL() << "shm was accepted as a network transport";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("shm is made by the intra-node fast path"), std::string::npos) << e.what();
  }
}

TEST(TransportRegistry, ApplicabilityByPairAndMemoryKind) {
  const PeerPair local{0, 1, true}, remote{0, 2, false};
  const TransportEntry& shm = *findTransport("shm");
  const TransportEntry& tcp = *findTransport("tcp");
  EXPECT_TRUE(shm.canConnect(local, MemoryKind::kHost));
  EXPECT_TRUE(shm.canConnect(local, MemoryKind::kHostRegistered));
  EXPECT_FALSE(shm.canConnect(remote, MemoryKind::kHost)) << "shared memory across hosts";
  EXPECT_TRUE(tcp.canConnect(remote, MemoryKind::kHost));
  EXPECT_TRUE(tcp.canConnect(local, MemoryKind::kHostRegistered));
  // No transport of this build reads device memory: the device path brings its own (issue 20).
  for (const TransportEntry& e : transportCatalogue()) {
    EXPECT_FALSE(e.canConnect(local, MemoryKind::kDevice)) << e.name;
    EXPECT_FALSE(e.canConnect(remote, MemoryKind::kDevice)) << e.name;
  }
}

// Stands in for a live transport: routePeers only compares pointers.
class NamedTransport final : public Transport {
 public:
  explicit NamedTransport(const char* n) : name_(n) {}
  const char* name() const override { return name_; }
  int progress(int) override { return 0; }
  void abort(const std::string&) override {}
  bool hasPending() const override { return false; }

 protected:
  void startSend(int, const ConstMemRef&, Transfer*) override {}
  void startRecv(int, const MemRef&, Transfer*) override {}

 private:
  const char* name_;
};

TEST(TransportRegistry, RoutesEachPeerToTheFirstTransportThatReachesIt) {
  NamedTransport shm("shm"), tcp("tcp");
  const std::vector<RouteCandidate> candidates = {{&shm, findTransport("shm")}, {&tcp, findTransport("tcp")}};
  // Rank 1 of four: ranks 0 and 1 share a host, 2 and 3 are elsewhere.
  const std::vector<bool> sameHost = {true, true, false, false};
  const std::vector<Transport*> host = routePeers(1, sameHost, candidates, MemoryKind::kHost);
  EXPECT_EQ(host, (std::vector<Transport*>{&shm, nullptr, &tcp, &tcp}));
  EXPECT_EQ(routePeers(1, sameHost, candidates, MemoryKind::kHostRegistered), host);
  EXPECT_EQ(routePeers(1, sameHost, candidates, MemoryKind::kDevice), (std::vector<Transport*>(4, nullptr)));
  // Without the shared-memory candidate (TERN_SHM_DISABLE), the network serves the same-host peer too.
  EXPECT_EQ(routePeers(1, sameHost, {candidates[1]}, MemoryKind::kHost),
            (std::vector<Transport*>{&tcp, nullptr, &tcp, &tcp}));
}

}  // namespace
}  // namespace tern
