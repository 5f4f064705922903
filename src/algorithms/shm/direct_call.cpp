#include "algorithms/shm/direct_call.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/shm/futex.hpp"
#include "transport/shm/process_identity.hpp"

namespace tern::shm {

void DirectCall::cmaReadPeer(int p, void* dst, uint64_t addr, size_t bytes, const char* label) const {
  if (!cmaRead(mesh->peer(p).pid, dst, addr, bytes)) {
    // ESRCH: the peer process no longer exists, the same failure its closed connections report elsewhere.
    if (errno == ESRCH) {
      throwError(ternRemoteError,
                 "rank %d: %s: rank %d (same host) died while its %s was being read (process_vm_readv: %s)", rank, what,
                 p, label, std::strerror(errno));
    }
    throwError(ternSystemError, "rank %d: %s: cannot read rank %d's %s (process_vm_readv: %s)", rank, what, p, label,
               std::strerror(errno));
  }
}

void DirectCall::cmaWritePeer(int p, uint64_t addr, const void* src, size_t bytes, const char* label) const {
  if (!cmaWrite(mesh->peer(p).pid, addr, src, bytes)) {
    if (errno == ESRCH) {
      throwError(ternRemoteError,
                 "rank %d: %s: rank %d (same host) died while its %s was being written (process_vm_writev: %s)", rank,
                 what, p, label, std::strerror(errno));
    }
    throwError(ternSystemError, "rank %d: %s: cannot write rank %d's %s (process_vm_writev: %s)", rank, what, p, label,
               std::strerror(errno));
  }
}

void DirectCall::finishOnePass() const {
  const uint32_t g = chunkBase + chunks;
  post(&RankControl::done, g);
  waitAllPeers(&RankControl::done, g, "end of the call");
}

void DirectCall::refuseIfAPeerLeft() const {
  for (int i = 1; i < n; ++i) {
    const int p = (rank + i) % n;
    if (ctrl(p).left.load(std::memory_order_seq_cst) != 0) {
      throwError(ternRemoteError,
                 "rank %d: rank %d (same host) failed or aborted: %s refused before touching its buffers", rank, p,
                 what);
    }
  }
}

void DirectCall::leaveAfterError() const {
  RankControl& mine = ctrl(rank);
  mine.left.store(1, std::memory_order_seq_cst);
  // Peers asleep on one of our flags look again now (their wait ends on `left`, through Watchdog::peerGone).
  for (auto* w : {&mine.small[0].seq, &mine.small[1].seq, &mine.call, &mine.in, &mine.red, &mine.done}) {
    futexWakeAll(w);
  }
  if (!exposed) return;
  const auto start = Clock::now();
  const auto bound = start + std::chrono::milliseconds(scope.dog->timeoutMs());
  for (int i = 1; i < n; ++i) {
    const int p = (rank + i) % n;
    RankControl& theirs = ctrl(p);
    // Not entered: it will see `left` before it touches anything (refuseIfAPeerLeft).
    if (!reached((theirs.*entryFlag).load(std::memory_order_seq_cst), entryValue)) continue;
    const PeerView& v = mesh->peer(p);
    auto lastLook = start;
    for (;;) {
      const uint32_t done = theirs.done.load(std::memory_order_seq_cst);
      if (reached(done, releaseDone) || theirs.left.load(std::memory_order_seq_cst) != 0) break;
      const auto now = Clock::now();
      // A peer process that died touches nothing; one stopped by a signal touches nothing until it is resumed, and
      // waiting for it longer than the call's own deadline would only delay this error.
      ProcessState state = ProcessState::kRunning;
      if (!v.sameProcess && now - lastLook >= std::chrono::milliseconds(10)) {
        lastLook = now;
        state = processState(v.pid);
      }
      if (state == ProcessState::kGone || (state == ProcessState::kStopped && now > scope.deadline)) break;
      if (now > bound) {
        TERN_LOG(kWarn, kShm, rank,
                 "%s: left after an error while rank %d (same host) may still use this rank's buffers (it neither "
                 "finished nor failed within TERN_TIMEOUT)",
                 what, p);
        break;
      }
      theirs.flagWaiters.fetch_add(1, std::memory_order_seq_cst);
      if (theirs.done.load(std::memory_order_seq_cst) == done) futexWait(&theirs.done, done, 1000);
      theirs.flagWaiters.fetch_sub(1, std::memory_order_release);
    }
  }
}

}  // namespace tern::shm
