#include "transport/shm/watchdog.hpp"

#include "base/error.hpp"
#include "transport/shm/futex.hpp"
#include "transport/shm/mesh.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern::shm {

void Watchdog::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.load()) return;
    reason_ = reason;
  }
  aborted_.store(true, std::memory_order_release);
  RankControl& mine = mesh_->ctrl(mesh_->rank());
  mine.aborted.store(1, std::memory_order_seq_cst);
  // Wake everything that might sleep on a flag or doorbell of ours (our own threads included), and our peers'
  // doorbells so that they look at our aborted flag now rather than at their next liveness check.
  futexWakeAll(&mine.doorbell);
  for (int p : mesh_->localPeers()) futexWakeAll(&mesh_->ctrl(p).doorbell);
  for (auto* w : {&mine.small[0].seq, &mine.small[1].seq, &mine.call, &mine.in, &mine.red, &mine.done}) {
    futexWakeAll(w);
  }
}

void Watchdog::checkAbortAndDeadline(int peer, Clock::time_point deadline, const std::atomic<bool>* abortFlag,
                                     const Describe& what) {
  const int rank = mesh_->rank();
  if (aborted()) {
    std::lock_guard<std::mutex> lock(mutex_);
    throwError(ternRemoteError, "rank %d: %s aborted: %s", rank, what().c_str(), reason_.c_str());
  }
  if (abortFlag != nullptr && abortFlag->load(std::memory_order_relaxed)) {
    throwError(ternRemoteError, "rank %d: %s aborted (communicator abort)", rank, what().c_str());
  }
  if (Clock::now() > deadline) {
    throwError(ternTimeout, "rank %d: timed out after %.1f s: %s (rank %d is on this host; TERN_TIMEOUT)", rank,
               timeoutMs_ / 1000.0, what().c_str(), peer);
  }
}

bool Watchdog::peerGone(int peer) {
  if (mesh_->ctrl(peer).aborted.load(std::memory_order_acquire) != 0) return true;
  if (mesh_->ctrl(peer).left.load(std::memory_order_acquire) != 0) return true;
  // Our own abort shuts our sockets down, which peerClosed() would report as the peer's death.
  return !aborted() && tcp_ != nullptr && tcp_->peerClosed(peer);
}

void Watchdog::throwPeerGone(int peer, const Describe& what) {
  const int rank = mesh_->rank();
  if (mesh_->ctrl(peer).aborted.load(std::memory_order_acquire) != 0 ||
      mesh_->ctrl(peer).left.load(std::memory_order_acquire) != 0) {
    throwError(ternRemoteError, "rank %d: rank %d (same host) failed or aborted: %s", rank, peer, what().c_str());
  }
  throwError(ternRemoteError, "rank %d: rank %d (same host) died (its connections closed): %s", rank, peer,
             what().c_str());
}

}  // namespace tern::shm
