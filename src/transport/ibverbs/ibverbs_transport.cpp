#include "transport/ibverbs/ibverbs_transport.hpp"

#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/ibverbs/ib_exchange.hpp"
#include "transport/ibverbs/ib_wire.hpp"
#include "transport/sliced_wait.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern {

namespace {

// Bounds how long destruction waits for posted writes to complete.
constexpr int kDrainMs = 10000;
constexpr int kCompletionBatch = 32;

// Work request ids: what completed (2 bits), for which peer (30 bits), which slot (32 bits).
enum class WrKind : uint64_t { kRecv = 0, kData = 1, kCredits = 2 };
uint64_t wrId(WrKind kind, int peer, uint32_t slot) {
  return (static_cast<uint64_t>(kind) << 62) | (static_cast<uint64_t>(peer) << 32) | slot;
}
WrKind wrKind(uint64_t id) { return static_cast<WrKind>(id >> 62); }
int wrPeer(uint64_t id) { return static_cast<int>((id >> 32) & 0x3fffffff); }
uint32_t wrSlot(uint64_t id) { return static_cast<uint32_t>(id); }

std::string describePorts(const std::vector<ib::PortInfo>& ports) {
  std::string s;
  for (const ib::PortInfo& p : ports) {
    if (!s.empty()) s += ", ";
    s += p.device + ":" + std::to_string(p.port) + (p.active ? "" : " (down)");
  }
  return s.empty() ? "none" : s;
}

}  // namespace

IbverbsTransport::IbverbsTransport(const NetworkSetup& setup, const ib::Settings& settings)
    : rank_(setup.rank),
      nranks_(setup.nranks),
      timeoutMs_(setup.timeoutMs),
      tcp_(setup.tcp),
      settings_(settings),
      slotBytes_(ib::kSlotHeaderBytes + settings.chunkBytes),
      // Data writes are bounded by the peer's credits (slots); credit returns by what we owe (slots) as well.
      sendDepth_(2 * settings.slots),
      // Reposted as each completes; in flight at once: the peer's data chunks plus its credit returns.
      recvDepth_(2 * settings.slots + 2),
      peers_(setup.nranks) {
  if (abortSignal_.wakeFd() < 0) throwSystemError("ibverbs: eventfd");
}

std::unique_ptr<IbverbsTransport> IbverbsTransport::create(const NetworkSetup& setup) {
  if (setup.tcp == nullptr) throwError(ternInternalError, "ibverbs: created without the TCP mesh");
  if (setup.nranks > (1 << 30)) throwError(ternInvalidArgument, "TERN_TRANSPORT=ibverbs: too many ranks");
  std::unique_ptr<IbverbsTransport> t(new IbverbsTransport(setup, ib::settingsFromEnv()));
  t->connect(setup);
  return t;
}

void IbverbsTransport::connect(const NetworkSetup& setup) {
  std::vector<ib::PortInfo> all = ib::enumeratePorts();
  if (all.empty()) {
    throwError(ternSystemError, "rank %d: TERN_TRANSPORT=ibverbs: no RDMA device found (ibv_devices lists none)",
               rank_);
  }
  std::vector<ib::PortInfo> selected = ib::selectPorts(settings_.hca, all);
  if (selected.empty()) {
    throwError(ternInvalidArgument,
               "rank %d: TERN_TRANSPORT=ibverbs: no active port matches TERN_IB_HCA='%s' (ports: %s)", rank_,
               settings_.hca.toString().c_str(), describePorts(all).c_str());
  }
  int cqEntries = std::max(1, (nranks_ - 1) * static_cast<int>(sendDepth_ + recvDepth_));
  device_ = std::make_unique<ib::Device>(ib::portForRank(selected, rank_), settings_.gidIndex, cqEntries, rank_);

  std::vector<std::vector<uint8_t>> records(nranks_);
  for (int p = 0; p < nranks_; ++p) {
    Peer& peer = peers_[p];
    peer.rank = p;
    if (p == rank_) continue;
    peer.qp = std::make_unique<ib::QueuePair>(*device_, sendDepth_, recvDepth_, rank_, p);
    peer.qp->toInit();
    peer.recvRing = std::make_unique<ib::Region>(device_->pd(), settings_.slots * slotBytes_,
                                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, rank_);
    peer.ring = std::make_unique<ib::RingReceiver>(settings_.slots);
    for (uint32_t i = 0; i < recvDepth_; ++i) postReceive(peer);
    ib::QpAddress mine;
    mine.linkLayer = device_->roce() ? 2 : 1;
    mine.mtu = device_->mtu();
    mine.lid = device_->lid();
    mine.port = static_cast<uint8_t>(device_->port().port);
    mine.qpn = peer.qp->qpn();
    mine.psn = peer.qp->psn();
    mine.slots = settings_.slots;
    mine.slotBytes = static_cast<uint32_t>(slotBytes_);
    mine.rkey = peer.recvRing->rkey();
    mine.ringAddress = peer.recvRing->address();
    mine.gid = device_->gid();
    auto wire = ib::encodeQpAddress(mine);
    records[p].assign(wire.begin(), wire.end());
  }
  auto theirs = ib::exchangeWithEachPeer(setup, records, ib::kQpAddressBytes, "queue pair exchange");
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    Peer& peer = peers_[p];
    peer.remote = ib::decodeQpAddress(theirs[p].data(), theirs[p].size(), p);
    if ((peer.remote.linkLayer == 2) != device_->roce()) {
      throwError(ternInvalidUsage, "rank %d: ibverbs: this rank's port is %s but rank %d's is %s: they cannot connect",
                 rank_, device_->roce() ? "RoCE" : "InfiniBand", p, peer.remote.linkLayer == 2 ? "RoCE" : "InfiniBand");
    }
    if (peer.remote.slotBytes <= ib::kSlotHeaderBytes || peer.remote.slotBytes > (64u << 20) + ib::kSlotHeaderBytes ||
        peer.remote.slots > 1024) {
      throwError(ternInternalError, "rank %d: ibverbs: rank %d announced a ring of %u x %u bytes", rank_, p,
                 peer.remote.slots, peer.remote.slotBytes);
    }
    peer.qp->connect(peer.remote, settings_.tuning);
    // Staging mirrors the peer's ring, so chunk k sits in the same slot on both sides.
    peer.sendRing = std::make_unique<ib::Region>(
        device_->pd(), static_cast<size_t>(peer.remote.slots) * peer.remote.slotBytes, IBV_ACCESS_LOCAL_WRITE, rank_);
    peer.window = std::make_unique<ib::CreditWindow>(peer.remote.slots);
    peer.stagingBusy.assign(peer.remote.slots, 0);
  }
  // Nobody writes before every peer's QP is ready to receive (a write reaching a QP still in INIT is dropped).
  std::vector<std::vector<uint8_t>> ready(nranks_, std::vector<uint8_t>(1, 1));
  ib::exchangeWithEachPeer(setup, ready, 1, "queue pair ready handshake");
  TERN_LOG(kInfo, kNet, rank_, "ibverbs: connected to %d peer(s) (%u slots x %zu bytes per peer)", nranks_ - 1,
           settings_.slots, settings_.chunkBytes);
}

IbverbsTransport::~IbverbsTransport() {
  if (device_ != nullptr) {
    if (!failure_.failed() && !abortSignal_.raised()) drainWrites();
    for (Peer& p : peers_) {
      p.qp.reset();  // before the memory it targets and the CQ it reports to
      p.sendRing.reset();
      p.recvRing.reset();
    }
    device_.reset();
  }
}

void IbverbsTransport::drainWrites() {
  // Sends were reported done once staged; their writes must reach the peer before the QPs go.
  auto deadline = Clock::now() + std::chrono::milliseconds(std::min(kDrainMs, timeoutMs_));
  // Only data matters: a credit return to a peer that already closed its QP can take the whole retry budget to
  // fail (TERN_IB_TIMEOUT x TERN_IB_RETRY_CNT), and that peer needs nothing more from us.
  auto outstanding = [&] {
    for (const Peer& p : peers_) {
      if (p.dataOutstanding > 0) return true;
    }
    return false;
  };
  try {
    while (outstanding() && Clock::now() < deadline) {
      device_->arm();
      if (pollCompletions() == 0) {
        pollfd pfd{device_->eventFd(), POLLIN, 0};
        ::poll(&pfd, 1, 10);
        device_->consumeEvents();
      }
    }
  } catch (const Error& e) {
    TERN_LOG(kInfo, kNet, rank_, "ibverbs: while closing: %s", e.what());
  }
}

bool IbverbsTransport::sameHost(int peer) const { return tcp_->sameHost(peer); }

bool IbverbsTransport::hasPending() const {
  for (const Peer& p : peers_) {
    if (!p.sends.empty() || !p.recvs.empty()) return true;
  }
  return false;
}

IbverbsTransport::Peer& IbverbsTransport::beginTransfer(int peer, size_t bytes, Transfer* transfer) {
  throwIfBroken();
  if (peer < 0 || peer >= nranks_ || peer == rank_) {
    throwError(ternInternalError, "ibverbs: rank %d posted a transfer to invalid peer %d", rank_, peer);
  }
  transfer->done = false;
  transfer->bytes = bytes;
  transfer->pendingParts = 1;
  return peers_[peer];
}

void IbverbsTransport::startSend(int peer, const ConstMemRef& src, Transfer* transfer) {
  Peer& p = beginTransfer(peer, src.bytes, transfer);
  p.sends.push_back({transfer, static_cast<const char*>(src.data),
                     ib::ChunkCursor(p.sendSequence++, src.bytes, p.remote.slotBytes - ib::kSlotHeaderBytes)});
}

void IbverbsTransport::startRecv(int peer, const MemRef& dst, Transfer* transfer) {
  Peer& p = beginTransfer(peer, dst.bytes, transfer);
  p.recvs.push_back({transfer, static_cast<char*>(dst.data),
                     ib::ChunkCursor(p.recvSequence++, dst.bytes, slotBytes_ - ib::kSlotHeaderBytes)});
}

void IbverbsTransport::postReceive(Peer& p) {
  ibv_recv_wr wr{};
  wr.wr_id = wrId(WrKind::kRecv, p.rank, 0);
  wr.sg_list = nullptr;  // writes with immediate carry no receive payload
  wr.num_sge = 0;
  ibv_recv_wr* bad = nullptr;
  int r = ibv_post_recv(p.qp->qp(), &wr, &bad);
  if (r != 0) {
    fail(ternSystemError,
         format("rank %d: ibverbs: ibv_post_recv for rank %d failed: %s", rank_, p.rank, std::strerror(r)));
  }
}

void IbverbsTransport::postWrite(Peer& p, uint64_t id, const void* local, uint32_t bytes, uint32_t lkey, uint32_t slot,
                                 uint32_t imm) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uint64_t>(local);
  sge.length = bytes;
  sge.lkey = lkey;
  ibv_send_wr wr{};
  wr.wr_id = id;
  wr.sg_list = bytes > 0 ? &sge : nullptr;
  wr.num_sge = bytes > 0 ? 1 : 0;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = p.remote.ringAddress + static_cast<uint64_t>(slot) * p.remote.slotBytes;
  wr.wr.rdma.rkey = p.remote.rkey;
  ibv_send_wr* bad = nullptr;
  int r = ibv_post_send(p.qp->qp(), &wr, &bad);
  if (r != 0) {
    fail(ternSystemError,
         format("rank %d: ibverbs: ibv_post_send to rank %d failed: %s", rank_, p.rank, std::strerror(r)));
  }
  ++p.sqOutstanding;
}

void IbverbsTransport::handleCompletion(const ibv_wc& wc) {
  WrKind kind = wrKind(wc.wr_id);
  int peer = wrPeer(wc.wr_id);
  if (peer < 0 || peer >= nranks_ || peer == rank_) {
    fail(ternInternalError, format("rank %d: ibverbs: completion for unknown peer %d", rank_, peer));
  }
  Peer& p = peers_[peer];
  if (kind != WrKind::kRecv && p.sqOutstanding > 0) --p.sqOutstanding;
  if (kind == WrKind::kData && p.dataOutstanding > 0) --p.dataOutstanding;
  if (wc.status != IBV_WC_SUCCESS) {
    if (kind == WrKind::kData) {
      fail(ternRemoteError,
           format("rank %d: ibverbs: RDMA write to rank %d failed: %s (the peer exited, was killed, or the fabric "
                  "failed)",
                  rank_, peer, ibv_wc_status_str(wc.status)));
    }
    // Flushed receives and failed credit returns carry no data: the peer may just have finished and closed its
    // QP. It is an error only while we still wait for that peer (checkPeers).
    if (p.failure == 0) p.failure = wc.status;
    anyPeerFailed_ = true;
    return;
  }
  switch (kind) {
    case WrKind::kRecv: {
      postReceive(p);
      uint32_t imm = ntohl(wc.imm_data);
      if (ib::immKind(imm) == ib::ImmKind::kCredits) {
        p.window->grant(ib::immValue(imm));
      } else {
        if (ib::immValue(imm) != p.ring->arrivalSlot()) {
          fail(ternInternalError, format("rank %d: ibverbs: chunk from rank %d landed in slot %u, expected %u", rank_,
                                         peer, ib::immValue(imm), p.ring->arrivalSlot()));
        }
        p.ring->arrived();
      }
      break;
    }
    case WrKind::kData:
      p.stagingBusy[wrSlot(wc.wr_id) % p.stagingBusy.size()] = 0;
      break;
    case WrKind::kCredits:
      break;
  }
}

int IbverbsTransport::pollCompletions() {
  int handled = 0;
  ibv_wc wc[kCompletionBatch];
  for (;;) {
    int n = ibv_poll_cq(device_->cq(), kCompletionBatch, wc);
    if (n < 0) fail(ternSystemError, format("rank %d: ibverbs: ibv_poll_cq failed", rank_));
    for (int i = 0; i < n; ++i) handleCompletion(wc[i]);
    handled += n;
    if (n < kCompletionBatch) return handled;
  }
}

int IbverbsTransport::deliver(Peer& p) {
  int completed = 0;
  while (p.ring->hasChunk() && !p.recvs.empty()) {
    RecvOp& op = p.recvs.front();
    const char* slot = p.recvRing->data() + static_cast<size_t>(p.ring->headSlot()) * slotBytes_;
    ib::SlotHeader header = ib::readSlotHeader(slot);
    ib::checkChunk(header, op.cursor, rank_, p.rank);
    ib::Chunk c = op.cursor.peek();
    if (c.length > 0) std::memcpy(op.data + c.offset, slot + ib::kSlotHeaderBytes, c.length);
    op.cursor.advance();
    p.ring->consume();
    if (op.cursor.done()) {
      op.transfer->done = true;
      ++completed;
      p.recvs.pop_front();
    }
  }
  return completed;
}

void IbverbsTransport::returnCredits(Peer& p) {
  if (p.ring->owed() == 0 || p.sqOutstanding >= sendDepth_) return;
  uint32_t n = p.ring->takeOwed();
  postWrite(p, wrId(WrKind::kCredits, p.rank, 0), nullptr, 0, 0, 0, ib::encodeImm(ib::ImmKind::kCredits, n));
}

int IbverbsTransport::pumpSends(Peer& p) {
  int completed = 0;
  const size_t slotBytes = p.remote.slotBytes;
  while (!p.sends.empty() && p.window->canSend() && p.sqOutstanding < sendDepth_) {
    uint32_t slot = static_cast<uint32_t>(p.window->sent() % p.remote.slots);
    if (p.stagingBusy[slot] != 0) break;  // its previous write has not completed locally yet
    SendOp& op = p.sends.front();
    char* staging = p.sendRing->data() + static_cast<size_t>(slot) * slotBytes;
    ib::Chunk c = op.cursor.peek();
    ib::writeSlotHeader(staging, op.cursor.header());
    if (c.length > 0) std::memcpy(staging + ib::kSlotHeaderBytes, op.data + c.offset, c.length);
    p.window->take();
    p.stagingBusy[slot] = 1;
    ++p.dataOutstanding;
    postWrite(p, wrId(WrKind::kData, p.rank, slot), staging, static_cast<uint32_t>(ib::kSlotHeaderBytes + c.length),
              p.sendRing->lkey(), slot, ib::encodeImm(ib::ImmKind::kData, slot));
    op.cursor.advance();
    if (op.cursor.done()) {
      op.transfer->done = true;  // staged and posted: the caller's buffer is free
      ++completed;
      p.sends.pop_front();
    }
  }
  return completed;
}

int IbverbsTransport::pass() {
  int completed = 0;
  try {
    pollCompletions();
    for (Peer& p : peers_) {
      if (p.rank == rank_) continue;
      completed += deliver(p);
      returnCredits(p);
      completed += pumpSends(p);
    }
  } catch (const Error& e) {
    if (!failure_.failed()) fail(e.code(), e.what());  // protocol and size errors from the pure helpers
    throw;
  }
  if (anyPeerFailed_) checkPeers(false);
  return completed;
}

void IbverbsTransport::checkPeers(bool checkConnections) {
  auto now = Clock::now();
  auto grace = ClosedPeerGrace::periodFor(timeoutMs_);
  for (Peer& p : peers_) {
    if (p.rank == rank_ || (p.sends.empty() && p.recvs.empty())) continue;
    size_t pending = p.sends.size() + p.recvs.size();
    if (p.failure != 0) {
      fail(ternRemoteError,
           format("rank %d: ibverbs: connection to rank %d failed (%s) with %zu transfer(s) pending: the peer "
                  "exited, was killed, or the fabric failed",
                  rank_, p.rank, ibv_wc_status_str(static_cast<ibv_wc_status>(p.failure)), pending));
    }
    if (checkConnections && p.closed.expired(tcp_->peerClosed(p.rank), now, grace)) {
      fail(ternRemoteError, ClosedPeerGrace::errorMessage(rank_, p.rank, pending));
    }
  }
}

int IbverbsTransport::progress(int waitMs) {
  throwIfBroken();
  int completed = pass();
  if (completed > 0 || waitMs <= 0 || !hasPending()) return completed;
  return waitInSlices(
      waitMs, [this](int ms) { return sleepOnCompletions(ms); },
      [this] {
        throwIfBroken();
        return pass();
      },
      [this] { return hasPending(); }, [this] { checkPeers(true); });
}

int IbverbsTransport::sleepOnCompletions(int ms) {
  device_->arm();
  int completed = pass();  // completions that arrived before the arm would raise no event
  if (completed > 0 || !hasPending()) return completed;
  pollfd fds[2] = {{device_->eventFd(), POLLIN, 0}, {abortSignal_.wakeFd(), POLLIN, 0}};
  if (::poll(fds, 2, ms) < 0 && errno != EINTR) throwSystemError("ibverbs: poll");
  device_->consumeEvents();
  return 0;
}

void IbverbsTransport::throwIfBroken() {
  failure_.rethrowIfFailed();
  if (abortSignal_.raised()) fail(ternRemoteError, abortSignal_.errorMessage(rank_));
}

void IbverbsTransport::stopQueuePairs() {
  // Stop the peers' writes into our rings and flush ours; callers' buffers are never touched by the HCA (only
  // the rings are), so nothing else needs canceling.
  for (Peer& p : peers_) {
    if (p.qp != nullptr) p.qp->toError();
  }
}

void IbverbsTransport::abort(const std::string& reason) {
  if (!abortSignal_.raise(reason)) return;
  tcp_->abort(reason);  // peers watch the TCP mesh: they fail now rather than at their timeout
}

}  // namespace tern
