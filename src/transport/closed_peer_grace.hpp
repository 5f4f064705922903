// ClosedPeerGrace: a peer whose TCP control connection closed counts as gone only after a grace period.
//
// The UCX and ibverbs transports move data over a fabric that may report a dead peer late or never, so while they
// wait for a peer they also ask the TCP mesh whether that peer's control connection closed (the kernel closes it
// when a process dies; an aborting peer shuts it down). A closed connection alone is no failure: a peer that
// finished normally closes it too, with its last data possibly still on the way. So the wait goes on for a grace
// period after the connection is first seen closed, and fails only if the peer is still owed transfers then.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "base/socket.hpp"

namespace tern {

class ClosedPeerGrace {
 public:
  // The grace period under a communicator timeout of timeoutMs: 500 ms, or half the timeout when that is shorter.
  static std::chrono::milliseconds periodFor(int timeoutMs);
  // The error for a peer whose connection stayed closed with transfers pending.
  static std::string errorMessage(int rank, int peer, size_t pendingTransfers);

  // Called at each check with whether the connection is closed now: the first sighting starts the grace period;
  // true once the connection has been closed for longer than grace.
  bool expired(bool closedNow, Clock::time_point now, std::chrono::milliseconds grace);

 private:
  bool closedSeen_ = false;
  Clock::time_point closedSince_{};
};

}  // namespace tern
