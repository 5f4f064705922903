// waitInSlices: the blocking half of progress() for transports that sleep on event fds and must notice dead peers
// by themselves (UCX, ibverbs).
//
// Their fabric may never report a peer that died, so a wait must not sleep through one: it sleeps in slices of at
// most kPeerCheckSliceMs and checks the peers it waits for between slices (closed_peer_grace.hpp). abort() wakes a
// sleeping slice at once through its eventfd (abort_signal.hpp). Both transports wait exactly this way; only how
// they sleep and how they make a pass differ.
#pragma once

#include <algorithm>
#include <chrono>

#include "base/socket.hpp"

namespace tern {

// Longest single sleep: bounds how late a dead peer (closed TCP connection) is noticed.
constexpr int kPeerCheckSliceMs = 100;

// Waits up to waitMs for transfers to complete and returns how many did (0 once waitMs is over). Each slice:
//   sleepUpTo(ms) sleeps on the transport's events for at most ms; it returns the transfers it completed if it
//     found work instead of sleeping (else 0);
//   pass() checks for failure and abort, makes one non-blocking round and returns the transfers it completed;
//   either returns at once when something completed or hasPending() turned false;
//   checkPeers() throws if a peer the transport waits for is gone.
template <typename SleepUpTo, typename Pass, typename HasPending, typename CheckPeers>
int waitInSlices(int waitMs, SleepUpTo sleepUpTo, Pass pass, HasPending hasPending, CheckPeers checkPeers) {
  auto until = Clock::now() + std::chrono::milliseconds(waitMs);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    int completed = sleepUpTo(static_cast<int>(std::clamp<long long>(left, 0, kPeerCheckSliceMs)));
    if (completed > 0 || !hasPending()) return completed;
    completed = pass();
    if (completed > 0 || !hasPending()) return completed;
    checkPeers();
    if (Clock::now() >= until) return 0;
  }
}

}  // namespace tern
