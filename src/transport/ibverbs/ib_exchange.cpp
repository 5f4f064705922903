#include "transport/ibverbs/ib_exchange.hpp"

#include "base/error.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern::ib {

std::vector<std::vector<uint8_t>> exchangeWithEachPeer(const NetworkSetup& setup,
                                                       const std::vector<std::vector<uint8_t>>& toPeer, size_t bytes,
                                                       const char* what) {
  std::vector<std::vector<uint8_t>> fromPeer(setup.nranks, std::vector<uint8_t>(bytes));
  // Transfers must not move while posted: sized once, never resized.
  std::vector<Transfer> sends(setup.nranks), recvs(setup.nranks);
  for (int p = 0; p < setup.nranks; ++p) {
    if (p == setup.rank) continue;
    if (toPeer[p].size() != bytes) throwError(ternInternalError, "ibverbs: %s message of the wrong size", what);
    setup.tcp->postRecv(p, fromPeer[p].data(), bytes, &recvs[p]);
    setup.tcp->postSend(p, toPeer[p].data(), bytes, &sends[p]);
  }
  auto allDone = [&] {
    for (int p = 0; p < setup.nranks; ++p) {
      if (p != setup.rank && (!sends[p].done || !recvs[p].done)) return false;
    }
    return true;
  };
  while (!allDone()) {
    if (setup.abortFlag != nullptr && setup.abortFlag->load()) {
      throwError(ternRemoteError, "rank %d: ibverbs: %s aborted", setup.rank, what);
    }
    if (Clock::now() > setup.deadline) {
      throwError(ternTimeout, "rank %d: ibverbs: %s timed out (TERN_TIMEOUT)", setup.rank, what);
    }
    setup.tcp->progress(100);
  }
  return fromPeer;
}

}  // namespace tern::ib
