// One round of a setup handshake over the communicator's TCP connections (shared-memory setup, UCX wire-up):
// every rank of a group sends the same fixed-size message to each other member and receives theirs.
#pragma once

#include <atomic>
#include <vector>

#include "base/socket.hpp"

namespace tern {
class TcpTransport;
}

namespace tern::shm {

// Sends mine (bytes long) to every rank in peers and returns what each sent (indexed like peers). Drives the TCP
// transport until done; throws tern::Error on a timeout, an abort or a peer that failed. `what` names the setup
// step in those errors ("shared-memory setup", "UCX wire-up").
std::vector<std::vector<char>> exchangeWithPeers(TcpTransport* tcp, int rank, const std::vector<int>& peers,
                                                 const void* mine, size_t bytes, Clock::time_point deadline,
                                                 const std::atomic<bool>* abortFlag, const char* what);

}  // namespace tern::shm
