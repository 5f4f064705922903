// Bootstrap: how ranks that know only a unique id find each other.
//
// The root (the process that called ternGetUniqueId, or rank 0 of an environment launch) runs a short-lived server
// thread. Every rank opens its own peer listener, connects to the root, presents the secret, its rank, the world
// size, its listener address and its host id. When all ranks have joined, the root sends everyone the table and
// exits. A connection without the right secret is dropped and logged; every wait has a deadline.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "core/socket.hpp"
#include "core/unique_id.hpp"

namespace tern {

struct PeerInfo {
  SocketAddress address;  // the peer's listener
  std::string hostId;
};

struct BootstrapResult {
  std::vector<PeerInfo> peers;  // indexed by rank
  Fd listener;                  // this rank's listener, for peers to connect to
};

// Starts the root server on an already-listening socket. expectedRanks may be 0 (taken from the first join).
void startBootstrapRoot(Fd listener, const Secret& secret, int expectedRanks, int timeoutSec);

// Creates a TCP unique id whose root is this process (listening on the interface TERN_SOCKET_IFNAME picks).
UniqueIdData createTcpUniqueId();

// Joins the job: returns every rank's listener address and host id.
BootstrapResult joinBootstrap(const UniqueIdData& id, int rank, int nranks, const std::string& hostId,
                              Clock::time_point deadline, const std::atomic<bool>* abortFlag);

}  // namespace tern
