// The UCX transport (TERN_TRANSPORT=ucx): tern's transfers as UCP tagged messages on one worker per communicator.
//
// Matching: each transfer is one tagged message whose tag names the sender and the transfer's sequence number in
// that direction (ucx_tag.hpp), so FIFO matching per (peer, direction) holds whatever order UCX delivers in. The
// receive is posted for exactly the expected size; a longer message (UCX truncates it) or a shorter one is
// reported as ternInvalidUsage, never silently accepted.
//
// Progress: progress() runs ucp_worker_progress and, when nothing completed, sleeps on the worker's event fd
// (ucp_worker_arm + poll) together with an eventfd that abort() writes, in slices of at most 100 ms. Between slices
// it checks the peers it waits for: an endpoint UCX reported failed, or a peer whose TCP control connection
// closed (the kernel closes it when a process dies, and an aborting peer shuts it down), ends the wait with
// ternRemoteError. No thread spins; UCX's own async thread only handles connection events.
//
// Failure: after the first error every call throws it again; outstanding requests are canceled so UCX stops
// touching the caller's buffers. abort() is safe from any thread: it wakes the sleeper and shuts the TCP mesh
// down so that peers fail at once too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tern/tern.h"
#include "transport/abort_signal.hpp"
#include "transport/closed_peer_grace.hpp"
#include "transport/failure_latch.hpp"
#include "transport/network_factory.hpp"
#include "transport/transport.hpp"
#include "transport/ucx/ucx_memory.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace tern {

class UcxTransport : public Transport {
 public:
  // Creates the worker, exchanges addresses over setup.tcp, connects endpoints to every peer and sends one empty
  // message each way per peer so the connections exist before the first collective. Collective over the ranks.
  static std::unique_ptr<UcxTransport> create(const NetworkSetup& setup);
  ~UcxTransport() override;

  const char* name() const override { return "ucx"; }
  int progress(int waitMs) override;
  void abort(const std::string& reason) override;
  bool hasPending() const override { return !live_.empty(); }
  bool sameHost(int peer) const override;

  // For tests and logs: the registration cache (null when registration is off).
  const RegistrationCache* registrationCache() { return registrations_->cache(); }

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* transfer) override;
  void startRecv(int peer, const MemRef& dst, Transfer* transfer) override;

 private:
  struct Op {
    UcxTransport* self = nullptr;
    Transfer* transfer = nullptr;
    int peer = -1;
    bool isSend = false;
    size_t expected = 0;
    size_t received = 0;
    void* request = nullptr;  // UCX's request while it is in flight (freed when reaped)
    ucs_status_t status = UCS_INPROGRESS;
    ucx::Registrations::Lease lease;
    size_t liveIndex = 0;  // position in live_
  };
  struct Peer {
    UcxTransport* self = nullptr;
    int rank = -1;
    ucp_ep_h ep = nullptr;
    uint64_t sendSequence = 0;
    uint64_t recvSequence = 0;
    int pending = 0;                // live transfers with this peer
    ucs_status_t failure = UCS_OK;  // set by UCX's endpoint error handler
    bool peerErrors = false;        // UCX error handling is on (else only the TCP check sees failures)
    ClosedPeerGrace closed;         // its TCP control connection closed (a grace period lets in-flight data land)
  };

  UcxTransport(const NetworkSetup& setup);
  void connect(const NetworkSetup& setup);
  void post(int peer, void* data, size_t bytes, Transfer* transfer, bool isSend);
  Op* newOp();
  void retire(Op* op);
  // Runs UCX progress and reports finished transfers; throws on a failed transfer or peer.
  int poll();
  int reap();
  void checkPeers(bool checkConnections);
  void waitForEvents(int ms);
  void throwIfBroken();
  [[noreturn]] void fail(ternResult_t code, const std::string& message) { failure_.fail(code, message); }
  void cancelOutstanding();
  void shutdown();

  static void onSendDone(void* request, ucs_status_t status, void* user);
  static void onRecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);

  int rank_;
  int nranks_;
  int timeoutMs_;
  TcpTransport* tcp_;
  std::unique_ptr<ucx::Worker> worker_;
  std::unique_ptr<ucx::Registrations> registrations_;
  std::vector<Peer> peers_;  // sized once: UCX holds pointers to its elements (error handler argument)
  bool anyPeerFailed_ = false;

  std::vector<std::unique_ptr<Op>> opStorage_;
  std::vector<Op*> freeOps_;
  std::vector<Op*> live_;       // posted and not yet reported
  std::vector<Op*> completed_;  // finished inside UCX (or at post time), not yet reported
  std::vector<Op*> reapBatch_;  // reap()'s working copy of completed_ (kept to reuse its capacity)

  AbortSignal abortSignal_;
  // An error left this transport: callers' Transfers may be gone, never touch them again.
  FailureLatch failure_{[this] { cancelOutstanding(); }};
};

}  // namespace tern
