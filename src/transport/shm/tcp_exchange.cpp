#include "transport/shm/tcp_exchange.hpp"

#include <string>

#include "base/error.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern::shm {

std::vector<std::vector<char>> exchangeWithPeers(TcpTransport* tcp, int rank, const std::vector<int>& peers,
                                                 const void* mine, size_t bytes, Clock::time_point deadline,
                                                 const std::atomic<bool>* abortFlag, const char* what) {
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
      throwError(ternRemoteError, "rank %d: %s aborted", rank, what);
    }
    if (Clock::now() > deadline) {
      std::string waiting;
      for (size_t i = 0; i < peers.size(); ++i) {
        if (!sends[i].done || !recvs[i].done) waiting += (waiting.empty() ? "" : ",") + std::to_string(peers[i]);
      }
      throwError(ternTimeout, "rank %d: %s timed out waiting for rank(s) %s (TERN_TIMEOUT)", rank, what,
                 waiting.c_str());
    }
    tcp->progress(100);
  }
  return theirs;
}

}  // namespace tern::shm
