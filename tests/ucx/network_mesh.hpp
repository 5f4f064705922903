// Test helper for network transports (UCX, ibverbs): N ranks as threads of this process, each with its own TCP
// mesh over loopback and a transport built on it exactly as the communicator builds one (NetworkSetup), then
// body(transport, tcp, rank) on every rank. The transport is destroyed before the TCP mesh, as in the communicator.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/bootstrap.hpp"
#include "core/error.hpp"
#include "transport/network_factory.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern::testing {

using NetworkFactory = std::function<std::unique_ptr<Transport>(const NetworkSetup&)>;
using NetworkBody = std::function<void(Transport& net, TcpTransport& tcp, int rank)>;

// One rank's TCP mesh and network transport.
struct NetworkRank {
  std::unique_ptr<TcpTransport> tcp;
  std::unique_ptr<Transport> net;

  NetworkRank(const UniqueIdData& id, int rank, int n, int timeoutMs, const NetworkFactory& factory) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    BootstrapResult boot = joinBootstrap(id, rank, n, localHostId(), deadline, nullptr);
    tcp = TcpTransport::connect(rank, n, boot, id.secret, 1, deadline, nullptr);
    NetworkSetup setup{rank, n, tcp.get(), deadline, nullptr, timeoutMs};
    net = factory(setup);
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
