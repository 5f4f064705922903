#include "transport/closed_peer_grace.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace tern {

namespace {

// A peer that finished normally may still have data landing for this long after its connection closed.
constexpr int kClosedGraceMs = 500;

}  // namespace

std::chrono::milliseconds ClosedPeerGrace::periodFor(int timeoutMs) {
  return std::chrono::milliseconds(std::min(kClosedGraceMs, timeoutMs / 2));
}

std::string ClosedPeerGrace::errorMessage(int rank, int peer, size_t pendingTransfers) {
  return format(
      "rank %d: rank %d closed its connection with %zu transfer(s) pending (the peer exited, was killed, or "
      "aborted)",
      rank, peer, pendingTransfers);
}

bool ClosedPeerGrace::expired(bool closedNow, Clock::time_point now, std::chrono::milliseconds grace) {
  if (!closedNow) return false;
  if (!closedSeen_) {
    closedSeen_ = true;
    closedSince_ = now;
    return false;
  }
  return now - closedSince_ > grace;
}

}  // namespace tern
