#include "transport/ucx/ucx_transport.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/sliced_wait.hpp"
#include "transport/tcp/tcp_transport.hpp"
#include "transport/ucx/ucx_status.hpp"
#include "transport/ucx/ucx_tag.hpp"
#include "transport/ucx/ucx_wireup.hpp"

namespace tern {

namespace {

// Bounds the flush of outstanding sends when the transport is destroyed.
constexpr int kFlushMs = 10000;
constexpr int kCloseMs = 2000;

// Waits for a UCX request (flush, endpoint close) while driving the worker, until it completes or the deadline.
void waitRequest(ucx::Worker& worker, void* request, Clock::time_point deadline) {
  if (request == nullptr || UCS_PTR_IS_ERR(request)) return;
  while (ucp_request_check_status(request) == UCS_INPROGRESS && Clock::now() < deadline) {
    if (worker.drain() == 0) {
      pollfd pfd{worker.eventFd(), POLLIN, 0};
      if (ucp_worker_arm(worker.worker()) == UCS_OK) ::poll(&pfd, 1, 10);
    }
  }
  ucp_request_free(request);
}

}  // namespace

UcxTransport::UcxTransport(const NetworkSetup& setup)
    : rank_(setup.rank), nranks_(setup.nranks), timeoutMs_(setup.timeoutMs), tcp_(setup.tcp), peers_(setup.nranks) {
  if (abortSignal_.wakeFd() < 0) throwSystemError("ucx: eventfd");
}

std::unique_ptr<UcxTransport> UcxTransport::create(const NetworkSetup& setup) {
  if (setup.nranks > ucx::kMaxRanks) {
    throwError(ternInvalidArgument, "TERN_TRANSPORT=ucx supports at most %d ranks (tag layout)", ucx::kMaxRanks);
  }
  if (setup.tcp == nullptr) throwError(ternInternalError, "ucx: created without the TCP mesh");
  std::unique_ptr<UcxTransport> t(new UcxTransport(setup));
  t->connect(setup);
  return t;
}

void UcxTransport::connect(const NetworkSetup& setup) {
  worker_ = std::make_unique<ucx::Worker>(rank_, nranks_);
  registrations_ = std::make_unique<ucx::Registrations>(worker_->context(), rank_);
  auto addresses = ucx::exchangeAddresses(setup, worker_->address());
  for (int p = 0; p < nranks_; ++p) {
    peers_[p].self = this;
    peers_[p].rank = p;
    if (p == rank_) continue;
    peers_[p].ep = ucx::connectEndpoint(worker_->worker(), rank_, p, addresses[p], &onEndpointError, &peers_[p],
                                        &peers_[p].peerErrors);
  }
  // One empty message each way per peer: UCX connects lazily, and doing it here makes a rank that cannot reach
  // another fail at init (with UCX's reason) instead of inside the first collective.
  std::vector<Transfer> sends(nranks_), recvs(nranks_);
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    postRecv(p, nullptr, 0, &recvs[p]);
    postSend(p, nullptr, 0, &sends[p]);
  }
  while (!live_.empty()) {
    if (setup.abortFlag != nullptr && setup.abortFlag->load()) {
      fail(ternRemoteError, format("rank %d: ucx: connection setup aborted", rank_));
    }
    if (Clock::now() > setup.deadline) {
      fail(ternTimeout, format("rank %d: ucx: timed out connecting to peers (TERN_TIMEOUT)", rank_));
    }
    progress(kPeerCheckSliceMs);
  }
  TERN_LOG(kInfo, kNet, rank_, "ucx: connected to %d peer(s)", nranks_ - 1);
}

UcxTransport::~UcxTransport() {
  if (worker_ != nullptr) shutdown();
  registrations_.reset();
  worker_.reset();
}

void UcxTransport::shutdown() {
  cancelOutstanding();
  bool healthy = !failure_.failed() && !abortSignal_.raised();
  // After a failure the worker is never progressed again. A receive UCX has already matched cannot be cancelled,
  // and driving the worker would let a live peer's remaining fragments land in a buffer the failed call has
  // already released (its scratch, or the caller's buffer after the error returned). Destroying the worker without
  // progress drops whatever is still in flight.
  if (healthy) worker_->drain();
  // Release what completed; requests UCX still holds are handed back to it (their callbacks may still run and
  // only touch Op records, which live until this object is gone).
  for (Op* op : live_) {
    if (op->request != nullptr) ucp_request_free(op->request);
    op->request = nullptr;
    registrations_->release(op->lease);
    op->lease = {};
  }
  if (healthy) {
    // Sends complete locally (data handed to UCX); make sure it left this process before the endpoints go.
    ucp_request_param_t param{};
    waitRequest(*worker_, ucp_worker_flush_nbx(worker_->worker(), &param),
                Clock::now() + std::chrono::milliseconds(std::min(kFlushMs, timeoutMs_)));
  }
  // Force-close where UCX allows it (peer error handling on both sides): a graceful close would wait for each
  // peer to take part, and a peer may be gone or busy elsewhere. Other endpoints close by flushing, bounded.
  // A failed transport only starts the closes (no progress, see above); the worker's destruction finishes them.
  auto deadline = Clock::now() + std::chrono::milliseconds(kCloseMs);
  for (Peer& p : peers_) {
    if (p.ep == nullptr) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = p.peerErrors ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    void* request = ucp_ep_close_nbx(p.ep, &param);
    if (healthy) {
      waitRequest(*worker_, request, deadline);
    } else if (request != nullptr && !UCS_PTR_IS_ERR(request)) {
      ucp_request_free(request);
    }
    p.ep = nullptr;
  }
}

bool UcxTransport::sameHost(int peer) const { return tcp_->sameHost(peer); }

void UcxTransport::startSend(int peer, const ConstMemRef& src, Transfer* transfer) {
  post(peer, const_cast<void*>(src.data), src.bytes, transfer, true);
}

void UcxTransport::startRecv(int peer, const MemRef& dst, Transfer* transfer) {
  post(peer, dst.data, dst.bytes, transfer, false);
}

UcxTransport::Op* UcxTransport::newOp() {
  if (freeOps_.empty()) {
    opStorage_.push_back(std::make_unique<Op>());
    freeOps_.push_back(opStorage_.back().get());
  }
  Op* op = freeOps_.back();
  freeOps_.pop_back();
  *op = Op{};
  op->self = this;
  op->liveIndex = live_.size();
  live_.push_back(op);
  return op;
}

void UcxTransport::retire(Op* op) {
  registrations_->release(op->lease);
  if (op->request != nullptr) ucp_request_free(op->request);
  --peers_[op->peer].pending;
  Op* last = live_.back();
  live_[op->liveIndex] = last;
  last->liveIndex = op->liveIndex;
  live_.pop_back();
  freeOps_.push_back(op);
}

void UcxTransport::post(int peer, void* data, size_t bytes, Transfer* transfer, bool isSend) {
  throwIfBroken();
  if (peer < 0 || peer >= nranks_ || peer == rank_) {
    throwError(ternInternalError, "ucx: rank %d posted a transfer to invalid peer %d", rank_, peer);
  }
  Peer& p = peers_[peer];
  transfer->done = false;
  transfer->bytes = bytes;
  transfer->pendingParts = 1;
  Op* op = newOp();
  op->transfer = transfer;
  op->peer = peer;
  op->isSend = isSend;
  op->expected = bytes;
  ++p.pending;
  op->lease = registrations_->acquire(data, bytes);

  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.user_data = op;
  if (op->lease.memh != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = op->lease.memh;
  }
  ucs_status_ptr_t request;
  if (isSend) {
    param.cb.send = &onSendDone;
    request = ucp_tag_send_nbx(p.ep, data, bytes, ucx::makeTag(rank_, p.sendSequence++), &param);
    if (request == nullptr) {  // completed at once (small message copied out): reported by the next progress()
      op->status = UCS_OK;
      completed_.push_back(op);
      return;
    }
  } else {
    // The callback runs even for a message that already arrived (never "completed at once"), so the received
    // length is always checked in one place.
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = &onRecvDone;
    request = ucp_tag_recv_nbx(worker_->worker(), data, bytes, ucx::makeTag(peer, p.recvSequence++), ucx::kTagFullMask,
                               &param);
  }
  if (UCS_PTR_IS_ERR(request)) {
    op->status = UCS_PTR_STATUS(request);
    completed_.push_back(op);
    return;
  }
  // With NO_IMM_CMPL the callback may already have run; the request is still ours to free (in retire).
  op->request = request;
}

void UcxTransport::onSendDone(void*, ucs_status_t status, void* user) {
  Op* op = static_cast<Op*>(user);
  op->status = status;
  op->self->completed_.push_back(op);
}

void UcxTransport::onRecvDone(void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  Op* op = static_cast<Op*>(user);
  op->status = status;
  op->received = (status == UCS_OK && info != nullptr) ? info->length : 0;
  op->self->completed_.push_back(op);
}

void UcxTransport::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  Peer* p = static_cast<Peer*>(arg);
  if (p->failure == UCS_OK) p->failure = status;
  p->self->anyPeerFailed_ = true;
  // Only worth a line while it matters; a peer that finished and left also closes its connections.
  TERN_LOG(kInfo, kNet, p->self->rank_, "ucx: endpoint to rank %d failed: %s", p->rank, ucs_status_string(status));
}

int UcxTransport::reap() {
  int completed = 0;
  // Swapped out first: every op of the batch is retired before a failure is thrown.
  std::vector<Op*>& batch = reapBatch_;
  batch.clear();
  batch.swap(completed_);
  std::string error;
  ternResult_t code = ternSuccess;
  for (Op* op : batch) {
    if (!failure_.failed() && code == ternSuccess) {
      if (op->status == UCS_OK && (op->isSend || op->received == op->expected)) {
        op->transfer->done = true;
        ++completed;
      } else if (op->status == UCS_OK) {
        code = ternInvalidUsage;
        error = format(
            "rank %d: rank %d sent a message of %zu bytes where %zu were expected (did the ranks call the same "
            "collective with the same count, datatype and root?)",
            rank_, op->peer, op->received, op->expected);
      } else if (op->status == UCS_ERR_MESSAGE_TRUNCATED) {
        code = ternInvalidUsage;
        error = format(
            "rank %d: rank %d sent a message larger than the %zu bytes expected (did the ranks call the same "
            "collective with the same count, datatype and root?)",
            rank_, op->peer, op->expected);
      } else {
        code = ucx::resultFor(op->status);
        error = format(
            "rank %d: ucx: %s of %zu bytes %s rank %d failed: %s (the peer exited, was killed, or the "
            "network failed)",
            rank_, op->isSend ? "send" : "receive", op->expected, op->isSend ? "to" : "from", op->peer,
            ucs_status_string(op->status));
      }
    }
    retire(op);
  }
  if (code != ternSuccess) fail(code, error);
  return completed;
}

int UcxTransport::poll() {
  worker_->drain();
  int completed = reap();
  if (anyPeerFailed_) checkPeers(false);
  return completed;
}

void UcxTransport::checkPeers(bool checkConnections) {
  auto now = Clock::now();
  auto grace = ClosedPeerGrace::periodFor(timeoutMs_);
  for (Peer& p : peers_) {
    if (p.pending == 0 || p.rank == rank_) continue;
    if (p.failure != UCS_OK) {
      fail(ternRemoteError,
           format("rank %d: ucx: connection to rank %d failed (%s) with %d transfer(s) pending: the peer exited, "
                  "was killed, or the network failed",
                  rank_, p.rank, ucs_status_string(p.failure), p.pending));
    }
    if (checkConnections && p.closed.expired(tcp_->peerClosed(p.rank), now, grace)) {
      fail(ternRemoteError, ClosedPeerGrace::errorMessage(rank_, p.rank, p.pending));
    }
  }
}

void UcxTransport::waitForEvents(int ms) {
  ucs_status_t status = ucp_worker_arm(worker_->worker());
  if (status == UCS_ERR_BUSY) return;  // events arrived since the last progress: go and handle them
  if (status != UCS_OK)
    fail(ucx::resultFor(status), format("rank %d: ucx: ucp_worker_arm failed: %s", rank_, ucs_status_string(status)));
  pollfd fds[2] = {{worker_->eventFd(), POLLIN, 0}, {abortSignal_.wakeFd(), POLLIN, 0}};
  if (::poll(fds, 2, ms) < 0 && errno != EINTR) throwSystemError("ucx: poll");
}

int UcxTransport::progress(int waitMs) {
  throwIfBroken();
  int completed = poll();
  if (completed > 0 || waitMs <= 0 || live_.empty()) return completed;
  return waitInSlices(
      waitMs,
      [this](int ms) {
        waitForEvents(ms);
        return 0;
      },
      [this] {
        throwIfBroken();
        return poll();
      },
      [this] { return !live_.empty(); }, [this] { checkPeers(true); });
}

void UcxTransport::throwIfBroken() {
  failure_.rethrowIfFailed();
  if (abortSignal_.raised()) fail(ternRemoteError, abortSignal_.errorMessage(rank_));
}

void UcxTransport::cancelOutstanding() {
  if (worker_ == nullptr) return;
  for (Op* op : live_) {
    if (op->request != nullptr && op->status == UCS_INPROGRESS) ucp_request_cancel(worker_->worker(), op->request);
  }
}

void UcxTransport::abort(const std::string& reason) {
  if (!abortSignal_.raise(reason)) return;
  // Peers watch the TCP mesh: shutting it down makes them fail now rather than at their timeout.
  tcp_->abort(reason);
}

}  // namespace tern
