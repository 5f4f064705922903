// Test helper for transports: N ranks as threads of this process, each with its own TCP mesh over loopback and a
// transport built on it exactly as the communicator builds a network transport (NetworkSetup), then
// body(transport, tcp, rank) on every rank. The transport is destroyed before the TCP mesh, as in the communicator.
// A factory may also use the job's unique id (inproc groups and shared-memory segments are named by its secret), or
// hand back the TCP mesh itself (then the mesh's shape, sockets per peer and host ids, is the factory's to choose).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "base/host_id.hpp"
#include "transport/bootstrap.hpp"
#include "transport/network_factory.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern::testing {

// How the TCP mesh under the transport is built.
struct MeshShape {
  int socketsPerPeer = 1;
  // Every rank reports a host id of its own: the TCP mesh then treats its peers as remote (and stripes large
  // messages over socketsPerPeer sockets, which it never does between ranks of one host).
  bool ranksOnDistinctHosts = false;
};

// Builds one rank's transport. Made from any callable taking the NetworkSetup (the UCX and ibverbs factories), or,
// through withJob(), from one that also takes the job's unique id.
class NetworkFactory {
 public:
  using WithJobId = std::function<std::unique_ptr<Transport>(const NetworkSetup&, const UniqueIdData&)>;

  template <std::invocable<const NetworkSetup&> F>
  NetworkFactory(F f)  // NOLINT(google-explicit-constructor): the checks are called with plain factory functions
      : make_([f = std::move(f)](const NetworkSetup& setup, const UniqueIdData&) { return f(setup); }) {}

  static NetworkFactory withJob(WithJobId make, MeshShape shape = {}) { return NetworkFactory(std::move(make), shape); }

  std::unique_ptr<Transport> operator()(const NetworkSetup& setup, const UniqueIdData& id) const {
    return make_(setup, id);
  }
  const MeshShape& shape() const { return shape_; }

 private:
  NetworkFactory(WithJobId make, MeshShape shape) : make_(std::move(make)), shape_(shape) {}
  WithJobId make_;
  MeshShape shape_;
};

using NetworkBody = std::function<void(Transport& net, TcpTransport& tcp, int rank)>;

// One rank's TCP mesh and network transport.
struct NetworkRank {
  std::unique_ptr<TcpTransport> tcp;
  std::unique_ptr<Transport> net;

  NetworkRank(const UniqueIdData& id, int rank, int n, int timeoutMs, const NetworkFactory& factory) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    const MeshShape& shape = factory.shape();
    std::string host = shape.ranksOnDistinctHosts ? "rank" + std::to_string(rank) + "." + hostId() : hostId();
    BootstrapResult boot = joinBootstrap(id, rank, n, host, deadline, nullptr);
    tcp = TcpTransport::connect(rank, n, boot, id.secret, shape.socketsPerPeer, deadline, nullptr);
    NetworkSetup setup{rank, n, tcp.get(), deadline, nullptr, timeoutMs};
    net = factory(setup, id);
  }
  ~NetworkRank() { close(); }
  // What a process exit does to its connections: the transport goes, then the TCP mesh.
  void close() {
    net.reset();
    tcp.reset();
  }
};

inline void runNetworkRanks(int n, int timeoutMs, const NetworkFactory& factory, const NetworkBody& body) {
  UniqueIdData id = createTcpUniqueId();
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        NetworkRank rank(id, r, n, timeoutMs, factory);
        body(*rank.net, *rank.tcp, r);
      } catch (const Error& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
}

// Drives the transport until every transfer is done; false (and a gtest failure) on a timeout. Errors propagate.
inline bool waitAll(Transport& t, const std::vector<Transfer*>& transfers, int timeoutMs = 60000) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  auto allDone = [&] {
    for (const Transfer* x : transfers) {
      if (!x->done) return false;
    }
    return true;
  };
  while (!allDone()) {
    if (Clock::now() > deadline) {
      ADD_FAILURE() << "transfers did not complete in " << timeoutMs << " ms";
      return false;
    }
    t.progress(100);
  }
  return true;
}

}  // namespace tern::testing
