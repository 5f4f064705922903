#include "transport/shm/shm_transport.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/copy_bytes.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/shm/futex.hpp"
#include "transport/shm/process_identity.hpp"
#include "transport/shm/shm_wire.hpp"

namespace tern::shm {

namespace {

// A rendezvous copy is done in pieces so that the consumed-bytes progress is visible in a debugger and a failed
// process_vm_readv names the offset; one piece is large enough to amortize the system call.
constexpr size_t kRendezvousPiece = 4u << 20;
constexpr int kSleepSliceMs = 10;

std::atomic<bool> gRendezvous{true};
std::atomic<uint64_t> gRendezvousSends{0};

// The steady clock in ns: CLOCK_MONOTONIC, one clock for every process of the host, so a sender's stamp and the
// receiver's readings compare.
int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

}  // namespace

void ShmTransport::setRendezvousForTesting(bool enabled) { gRendezvous.store(enabled); }
uint64_t ShmTransport::rendezvousSendsForTesting() { return gRendezvousSends.load(); }

ShmTransport::ShmTransport(Mesh* mesh, Watchdog* dog, const SpinPolicy& spin)
    : mesh_(mesh),
      dog_(dog),
      spin_(spin),
      rank_(mesh->rank()),
      payload_(kRingSlotBytes - sizeof(SlotHeader)),
      peers_(mesh->nranks()) {
  const bool learn = envFlag("SHM_CMA_LEARN", true);
  for (int p : mesh->localPeers()) {
    const PeerView& v = mesh->peer(p);
    peers_[p].learner = RendezvousLearner(learn && !v.sameProcess && v.cmaFrom, !mesh->kernelCopiesSlow());
  }
}

void ShmTransport::startSend(int peer, const ConstMemRef& src, Transfer* transfer) {
  transfer->done = false;
  transfer->bytes = src.bytes;
  SendOp op{transfer, static_cast<const char*>(src.data), src.bytes};
  const PeerView& v = mesh_->peer(peer);
  if (src.bytes >= kRendezvousBytes && v.cmaTo && gRendezvous.load(std::memory_order_relaxed)) {
    const uint64_t asked = mesh_->ring(rank_, peer)->rendezvousBands.value.load(std::memory_order_relaxed);
    // Between threads a rendezvous is a plain copy, from a ring slot's size; between processes the receiver learns.
    op.rendezvous = v.sameProcess ? src.bytes >= kRingSlotBytes
                                  : RendezvousLearner::wantsRendezvous(asked, src.bytes, !mesh_->kernelCopiesSlow());
  }
  if (op.rendezvous) gRendezvousSends.fetch_add(1, std::memory_order_relaxed);
  peers_[peer].sends.push_back(op);
  ++pending_;
}

void ShmTransport::startRecv(int peer, const MemRef& dst, Transfer* transfer) {
  transfer->done = false;
  transfer->bytes = dst.bytes;
  RecvOp op{transfer, static_cast<char*>(dst.data), dst.bytes};
  if (dst.bytes >= kRendezvousBytes) op.postedNs = nowNs();
  peers_[peer].recvs.push_back(op);
  ++pending_;
}

void ShmTransport::notify(int peer) {
  peers_[peer].moved = true;
  notifyMoved();
}

void ShmTransport::notifyMoved() {
  // Stored only when it changed: the line is one that peers poll, and a store would take it from them every time.
  std::atomic<int32_t>& cpu = mesh_->ctrl(rank_).cpu;
  if (const int now = currentCpu(); cpu.load(std::memory_order_relaxed) != now)
    cpu.store(now, std::memory_order_relaxed);
  // Pairs with the sleeper's "register, then re-check the rings" (see futex.hpp): our ring updates must be visible
  // before we look at the waiter counts. The fence waits for those stores to reach the peers, a cache-line round
  // trip: one per pass, not one per ring moved.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int p : mesh_->localPeers()) {
    if (!peers_[p].moved) continue;
    peers_[p].moved = false;
    RankControl& c = mesh_->ctrl(p);
    if (c.doorbellWaiters.load(std::memory_order_relaxed) != 0) ring(c.doorbell, c.doorbellWaiters);
  }
}

int ShmTransport::pushSends(int peer, PeerState& s) {
  RingHeader* ring = mesh_->ring(rank_, peer);
  const uint64_t slots = mesh_->layout().ringSlots;
  int completed = 0;
  bool produced = false;
  while (!s.sends.empty()) {
    // The consumer's index is read only when the ring looks full: it is a line the consumer writes per message, and
    // reading it every time would cost a transfer between the two CPUs per message.
    if (s.head - s.tailSeen >= slots) {
      s.tailSeen = ring->tail.value.load(std::memory_order_acquire);
      if (s.head - s.tailSeen >= slots) break;
    }
    SendOp& op = s.sends.front();
    char* slot = mesh_->ringSlot(rank_, peer, s.head);
    auto* h = reinterpret_cast<SlotHeader*>(slot);
    if (!op.started) h->startNs = op.bytes >= kRendezvousBytes ? nowNs() : 0;
    if (op.rendezvous) {
      h->kind = SlotKind::kRendezvous;
      h->bytes = 0;
      h->msgBytes = op.bytes;
      h->addr = reinterpret_cast<uint64_t>(op.data);
      s.acks.push_back(AckWait{op.transfer, s.head});
      s.sends.pop_front();
    } else {
      size_t chunk = std::min(payload_, op.bytes - op.offset);
      h->kind = op.started ? SlotKind::kMore : SlotKind::kFirst;
      h->bytes = static_cast<uint32_t>(chunk);
      h->msgBytes = op.bytes;
      if (chunk > 0) copyBytes(slot + sizeof(SlotHeader), op.data + op.offset, chunk);
      op.offset += chunk;
      op.started = true;
      if (op.offset == op.bytes) {
        op.transfer->done = true;
        ++completed;
        s.sends.pop_front();
      }
    }
    // Publish slot by slot: the consumer starts copying out while we fill the next one.
    std::atomic_ref<uint64_t>(h->seq).store(s.head + 1, std::memory_order_release);
    ++s.head;
    produced = true;
  }
  if (produced) s.moved = true;  // pass() wakes the peer if it sleeps
  return completed;
}

int ShmTransport::reapAcks(int peer, PeerState& s) {
  if (s.acks.empty()) return 0;
  const uint64_t tail = mesh_->ring(rank_, peer)->tail.value.load(std::memory_order_acquire);
  s.tailSeen = tail;
  int completed = 0;
  while (!s.acks.empty() && s.acks.front().slot < tail) {
    s.acks.front().transfer->done = true;
    s.acks.pop_front();
    ++completed;
  }
  return completed;
}

void ShmTransport::copyRendezvous(int peer, RecvOp& r, const SlotHeader& h) {
  const PeerView& v = mesh_->peer(peer);
  while (r.offset < r.bytes) {
    size_t piece = std::min(kRendezvousPiece, r.bytes - r.offset);
    if (v.sameProcess) {
      copyBytes(r.data + r.offset, reinterpret_cast<const char*>(h.addr) + r.offset, piece);
    } else if (!cmaRead(v.pid, r.data + r.offset, h.addr + r.offset, piece)) {
      int err = errno;
      if (dog_->peerGone(peer)) {
        dog_->throwPeerGone(peer, [&] { return format("receiving %zu bytes from it", r.bytes); });
      }
      throwError(ternSystemError,
                 "rank %d: process_vm_readv of %zu bytes from rank %d (pid %d) failed at offset "
                 "%zu: %s",
                 rank_, piece, peer, static_cast<int>(v.pid), r.offset, std::strerror(err));
    }
    r.offset += piece;
  }
}

void ShmTransport::readRendezvous(int peer, RingHeader& ring, uint64_t slot, RecvOp& r, const SlotHeader& h) {
  // The sender's buffer is its caller's again once its call has failed and it raised `left`
  // (withdrawAfterFailure). Announce the read first, then look at `left` (both sequentially consistent, as on the
  // sender's side): either the sender sees the announcement and waits for the read to end, or this rank sees `left`
  // and reads nothing.
  RankControl& theirs = mesh_->ctrl(peer);
  auto refuse = [&](const char* when) {
    ring.reading.value.store(0, std::memory_order_release);
    notify(peer);
    throwError(ternRemoteError, "rank %d: rank %d (same host) failed %s its %zu-byte send (rendezvous); not received",
               rank_, peer, when, r.bytes);
  };
  ring.reading.value.store(slot + 1, std::memory_order_seq_cst);
  if (theirs.left.load(std::memory_order_seq_cst) != 0) refuse("and withdrew, before this rank read");
  try {
    copyRendezvous(peer, r, h);
  } catch (...) {
    ring.reading.value.store(0, std::memory_order_release);
    notify(peer);
    throw;
  }
  // A sender gives up waiting for a reader that is stopped or slower than its timeout; what such a reader copied
  // may be its caller's next data, so a send withdrawn during the read is never delivered as received.
  if (theirs.left.load(std::memory_order_seq_cst) != 0) refuse("while this rank was reading");
  ring.reading.value.store(0, std::memory_order_release);
}

int ShmTransport::pullRecvs(int peer, PeerState& s) {
  RingHeader* ring = mesh_->ring(peer, rank_);
  int completed = 0;
  bool consumed = false;
  while (!s.recvs.empty()) {
    RecvOp& r = s.recvs.front();
    char* slot = mesh_->ringSlot(peer, rank_, s.tail);
    auto* filled = &reinterpret_cast<SlotHeader*>(slot)->seq;
    if (std::atomic_ref<uint64_t>(*filled).load(std::memory_order_acquire) != s.tail + 1) break;
    // The header is the peer's to write: copied once, checked against this receive, and only the copy is used.
    const SlotHeader h = wire::readSlotHeader(slot);
    wire::checkSlotHeader(h, r.started, r.bytes, r.offset, payload_, rank_, peer);
    if (!r.started) {
      r.rendezvous = h.kind == SlotKind::kRendezvous;
      r.senderStartNs = h.startNs;
    }
    r.started = true;
    if (h.kind == SlotKind::kRendezvous) {
      readRendezvous(peer, *ring, s.tail, r, h);
    } else {
      if (h.bytes > 0) copyBytes(r.data + r.offset, slot + sizeof(SlotHeader), h.bytes);
      r.offset += h.bytes;
    }
    ++s.tail;
    ring->tail.value.store(s.tail, std::memory_order_release);
    consumed = true;
    if (r.offset == r.bytes) {
      if (r.bytes >= kRendezvousBytes) learnFrom(peer, s, r);
      r.transfer->done = true;
      s.recvs.pop_front();
      ++completed;
    }
  }
  if (consumed) s.moved = true;  // pass() wakes the peer if it sleeps
  return completed;
}

void ShmTransport::learnFrom(int peer, PeerState& s, const RecvOp& r) {
  // From the later of the message's start and this receive's posting: what the transfer cost where this rank waited
  // for it. The sender's stamp is a hint from another process; clamped to now, it cannot make a time negative.
  const int64_t end = nowNs();
  const int64_t began = std::max(r.postedNs, std::min(r.senderStartNs, end));
  if (s.learner.record(r.bytes, r.rendezvous, static_cast<double>(end - began) * 1e-9, end)) {
    mesh_->ring(peer, rank_)->rendezvousBands.value.store(s.learner.published(), std::memory_order_relaxed);
    const std::string decided = s.learner.takeDecision();
    if (!decided.empty()) TERN_LOG(kInfo, kShm, rank_, "from rank %d, %s", peer, decided.c_str());
  }
}

void ShmTransport::withdrawAfterFailure() {
  bool exposed = false;
  for (int p : mesh_->localPeers()) exposed = exposed || !peers_[p].acks.empty();
  if (!exposed) return;  // only a rendezvous send lets a peer into this rank's memory
  RankControl& mine = mesh_->ctrl(rank_);
  mine.left.store(1, std::memory_order_seq_cst);
  for (int p : mesh_->localPeers()) futexWakeAll(&mesh_->ctrl(p).doorbell);
  const auto start = Clock::now();
  const auto bound = start + std::chrono::milliseconds(dog_->timeoutMs());
  for (int p : mesh_->localPeers()) {
    if (peers_[p].acks.empty()) continue;
    const RingIndex& reading = mesh_->ring(rank_, p)->reading;
    const PeerView& v = mesh_->peer(p);
    auto lastLook = start;
    while (reading.value.load(std::memory_order_seq_cst) != 0) {
      const auto now = Clock::now();
      // A peer process that died reads nothing more; one stopped by a signal reads nothing until it is resumed, and
      // then refuses what it read (readRendezvous). Threads of this process cannot be stopped apart from it.
      if (!v.sameProcess && now - lastLook >= std::chrono::milliseconds(kSleepSliceMs)) {
        lastLook = now;
        if (processState(v.pid) != ProcessState::kRunning) break;
      }
      if (now > bound) {
        TERN_LOG(kWarn, kShm, rank_,
                 "left a failed call while rank %d (same host) was still reading a send of this rank (it neither "
                 "finished nor failed within TERN_TIMEOUT)",
                 p);
        break;
      }
      // The reader rings our doorbell when it is done (pullRecvs, or readRendezvous's refusal).
      mine.doorbellWaiters.fetch_add(1, std::memory_order_seq_cst);
      const uint32_t bell = mine.doorbell.load(std::memory_order_seq_cst);
      if (reading.value.load(std::memory_order_seq_cst) != 0) futexWait(&mine.doorbell, bell, 1000);
      mine.doorbellWaiters.fetch_sub(1, std::memory_order_release);
    }
  }
}

void ShmTransport::throwIfFailed() {
  if (dog_->aborted()) {
    dog_->checkAbortAndDeadline(rank_, Clock::time_point::max(), nullptr, [] { return std::string("shm transport"); });
  }
}

int ShmTransport::pass() {
  throwIfFailed();
  if (pending_ == 0) return 0;
  int completed = 0;
  bool moved = false;
  try {
    for (int p : mesh_->localPeers()) {
      PeerState& s = peers_[p];
      if (!s.sends.empty()) completed += pushSends(p, s);
      if (!s.acks.empty()) completed += reapAcks(p, s);
      if (!s.recvs.empty()) completed += pullRecvs(p, s);
      moved = moved || s.moved;
    }
  } catch (...) {
    notifyMoved();  // a receive that failed (bad bytes, a peer gone) after others moved: those peers still hear
    throw;
  }
  if (moved) notifyMoved();
  movedLastPass_ = moved;
  pending_ -= static_cast<size_t>(completed);
  return completed;
}

bool ShmTransport::pendingPeerOnAnotherCpu() const {
  int cpu = currentCpu();
  for (int p : mesh_->localPeers()) {
    const PeerState& s = peers_[p];
    if (s.sends.empty() && s.acks.empty() && s.recvs.empty()) continue;
    if (mesh_->peer(p).ctrl->cpu.load(std::memory_order_relaxed) != cpu) return true;
  }
  return false;
}

int ShmTransport::checkPeers() {
  // The probe costs a recv(MSG_PEEK) per socket: once per sleep slice is often enough to notice a dead peer.
  auto now = Clock::now();
  if (now - lastProbe_ < std::chrono::milliseconds(kSleepSliceMs)) return 0;
  lastProbe_ = now;
  int completed = 0;
  for (int p : mesh_->localPeers()) {
    PeerState& s = peers_[p];
    if (s.sends.empty() && s.acks.empty() && s.recvs.empty()) continue;
    if (!dog_->peerGone(p)) continue;
    // What the peer delivered before it went (it may have finished its part and exited normally) completes our
    // transfers, and the caller must hear of them: a completion dropped here was never reaped, so the collective
    // waited for it until TERN_TIMEOUT.
    completed += pass();
    if (s.sends.empty() && s.acks.empty() && s.recvs.empty()) continue;
    dog_->throwPeerGone(p, [&] {
      return format("%zu sends and %zu receives with it pending", s.sends.size() + s.acks.size(), s.recvs.size());
    });
  }
  return completed;
}

int ShmTransport::progress(int waitMs) {
  int completed = pass();
  if (completed > 0 || waitMs <= 0 || pending_ == 0) return completed;
  auto start = Clock::now();
  auto deadline = start + std::chrono::milliseconds(waitMs);
  // Spin first, unless every peer we wait for shares our CPU (see flag_wait.hpp for why); then sleep on our doorbell.
  const bool spins = spin_.ns() > 0 && pendingPeerOnAnotherCpu();
  bool yielded = false;  // a yield poll ran out before the sleep below
  if (spins) {
    auto end = start + std::chrono::nanoseconds(spin_.ns());
    for (auto now = start; now < end; now = Clock::now()) {
      // A pass after every pause: an idle pass is a few loads of lines the peer has not touched, while a pause
      // costs tens of nanoseconds on some CPUs, so polling less often would only delay noticing an arrival. The
      // clock is read once per batch of passes.
      bool moved = false;
      for (int i = 0; i < 16; ++i) {
        cpuRelax();
        if ((completed = pass()) > 0) {
          spin_.succeeded();
          return completed;
        }
        moved = moved || movedLastPass_;
      }
      // Slots moved but no message ended: a message longer than the spin is streaming through the rings. The spin
      // goes on while it does (as the TCP transport's does while bytes move); sleeping now would cost a wake-up per
      // slot for the rest of the message.
      if (moved) end = now + std::chrono::nanoseconds(spin_.ns());
    }
  } else if (const int64_t yieldNs = spin_.yieldNs(); yieldNs > 0) {
    // Ranks outnumber the CPUs: the peer is most likely runnable but queued, often on our CPU; yielding runs it at
    // once where a sleep would add a wake-up to every message (transport/spin_policy.hpp).
    const auto end = std::min(deadline, start + std::chrono::nanoseconds(yieldNs));
    do {
      sched_yield();
      if ((completed = pass()) > 0) {
        spin_.yieldSucceeded();
        return completed;
      }
    } while (Clock::now() < end);
    yielded = true;
  } else {
    for (int i = 0; i < spin_.policy().yields; ++i) {
      sched_yield();
      if ((completed = pass()) > 0) return completed;
    }
  }
  RankControl& me = mesh_->ctrl(rank_);
  for (;;) {
    me.doorbellWaiters.fetch_add(1, std::memory_order_seq_cst);
    uint32_t bell = me.doorbell.load(std::memory_order_seq_cst);
    completed = pass();
    if (completed == 0) {
      auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
      int sliceUs = static_cast<int>(std::clamp<int64_t>(left, 1, kSleepSliceMs * 1000));
      futexWait(&me.doorbell, bell, sliceUs);
    }
    me.doorbellWaiters.fetch_sub(1, std::memory_order_release);
    if (completed > 0 || (completed = pass()) > 0) {
      // The spin or the yield poll ran out before this arrived: the budget learns how long it would have had to last.
      const int64_t waitedNs = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
      if (spins) spin_.sleptThrough(waitedNs);
      if (yielded) spin_.yieldSleptThrough(waitedNs);
      return completed;
    }
    if ((completed = checkPeers()) > 0) return completed;
    if (Clock::now() >= deadline) {
      if (spins) spin_.failed();
      // A wait that outlasted the yield poll; the caller comes back for the rest of it.
      if (yielded)
        spin_.yieldSleptThrough(std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - start).count());
      return 0;
    }
  }
}

}  // namespace tern::shm
