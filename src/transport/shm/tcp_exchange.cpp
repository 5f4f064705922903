#include "transport/shm/tcp_exchange.hpp"

#include "core/error.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern::shm {

std::vector<std::vector<char>> exchangeWithPeers(TcpTransport* tcp, int rank, const std::vector<int>& peers,
                                                 const void* mine, size_t bytes, Clock::time_point deadline,
                                                 const std::atomic<bool>* abortFlag) {
  std::vector<std::vector<char>> theirs(peers.size(), std::vector<char>(bytes));
  // Transfers must not move while posted: sized once, never resized.
  std::vector<Transfer> sends(peers.size()), recvs(peers.size());
  for (size_t i = 0; i < peers.size(); ++i) {
    tcp->postRecv(peers[i], theirs[i].data(), bytes, &recvs[i]);
    tcp->postSend(peers[i], mine, bytes, &sends[i]);
  }
  auto allDone = [&] {
    for (size_t i = 0; i < peers.size(); ++i) {
      if (!sends[i].done || !recvs[i].done) return false;
    }
    return true;
  };
  while (!allDone()) {
    if (abortFlag != nullptr && abortFlag->load()) {
      throwError(ternRemoteError, "rank %d: shared-memory setup aborted", rank);
    }
    if (Clock::now() > deadline) {
      throwError(ternTimeout, "rank %d: shared-memory setup timed out waiting for same-host peers (TERN_TIMEOUT)",
                 rank);
    }
    tcp->progress(100);
  }
  return theirs;
}

}  // namespace tern::shm
