// The ibverbs transport (TERN_TRANSPORT=ibverbs): RC queue pairs on one RDMA port, one QP per peer.
//
// Data path: every (sender, receiver) pair has a ring of slots in the receiver's registered memory. The sender
// copies each chunk of a message (header + payload, ib_chunks.hpp) into a registered staging slot and RDMA-writes
// it, with an immediate, into the same slot of the peer's ring. The receiver sees the immediate as a receive
// completion, checks the header against the receive it has posted (sequence, size), copies the payload out and
// returns the slot as a credit (a zero-byte write with an immediate). Credits (ib_credits.hpp) mean a sender
// never overwrites an unconsumed slot. One copy on each side, but no per-call registration and no rendezvous
// round trip: the same trade NCCL makes for unregistered host buffers.
//
// A send is done (its buffer reusable) once its last chunk is in staging and posted; the data then belongs to the
// HCA, and a failure to deliver it is reported by a later progress().
//
// Progress: completions are polled from one CQ shared by all QPs; with nothing to do progress() arms the CQ and
// sleeps in poll() on the completion channel's fd and an eventfd that abort() writes, in slices of at most 100 ms,
// checking between slices that the peers it waits for still hold their TCP control connection.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "tern/tern.h"
#include "transport/abort_signal.hpp"
#include "transport/closed_peer_grace.hpp"
#include "transport/failure_latch.hpp"
#include "transport/ibverbs/ib_chunks.hpp"
#include "transport/ibverbs/ib_credits.hpp"
#include "transport/ibverbs/ib_device.hpp"
#include "transport/ibverbs/ib_memory.hpp"
#include "transport/ibverbs/ib_qp.hpp"
#include "transport/ibverbs/ib_settings.hpp"
#include "transport/network_factory.hpp"
#include "transport/transport.hpp"

namespace tern {

class IbverbsTransport : public Transport {
 public:
  // Opens the port TERN_IB_HCA selects, creates and connects one QP per peer over setup.tcp. Collective.
  static std::unique_ptr<IbverbsTransport> create(const NetworkSetup& setup);
  ~IbverbsTransport() override;

  const char* name() const override { return "ibverbs"; }
  int progress(int waitMs) override;
  void abort(const std::string& reason) override;
  bool hasPending() const override;
  bool sameHost(int peer) const override;

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* transfer) override;
  void startRecv(int peer, const MemRef& dst, Transfer* transfer) override;

 private:
  struct SendOp {
    Transfer* transfer;
    const char* data;
    ib::ChunkCursor cursor;
  };
  struct RecvOp {
    Transfer* transfer;
    char* data;
    ib::ChunkCursor cursor;
  };
  struct Peer {
    int rank = -1;
    std::unique_ptr<ib::QueuePair> qp;
    ib::QpAddress remote;
    std::unique_ptr<ib::Region> recvRing;  // peers write here (our geometry)
    std::unique_ptr<ib::Region> sendRing;  // staging (the peer's ring geometry)
    std::unique_ptr<ib::CreditWindow> window;
    std::unique_ptr<ib::RingReceiver> ring;
    std::vector<uint8_t> stagingBusy;  // a staged chunk's write has not completed locally yet
    std::deque<SendOp> sends;
    std::deque<RecvOp> recvs;
    uint64_t sendSequence = 0;
    uint64_t recvSequence = 0;
    uint32_t sqOutstanding = 0;    // posted writes (data and credits) not yet completed locally
    uint32_t dataOutstanding = 0;  // of which data chunks: what destruction must wait for
    int failure = 0;               // an ibv_wc_status from a completion that needed no immediate error (see fail rules)
    ClosedPeerGrace closed;        // its TCP control connection closed (a grace period lets in-flight data land)
  };

  IbverbsTransport(const NetworkSetup& setup, const ib::Settings& settings);
  void connect(const NetworkSetup& setup);
  Peer& beginTransfer(int peer, size_t bytes, Transfer* transfer);
  int pass();
  int sleepOnCompletions(int ms);
  int pollCompletions();
  int deliver(Peer& p);
  void returnCredits(Peer& p);
  int pumpSends(Peer& p);
  void postWrite(Peer& p, uint64_t wrId, const void* local, uint32_t bytes, uint32_t lkey, uint32_t slot, uint32_t imm);
  void postReceive(Peer& p);
  void handleCompletion(const struct ibv_wc& wc);
  void checkPeers(bool checkConnections);
  void drainWrites();
  void throwIfBroken();
  [[noreturn]] void fail(ternResult_t code, const std::string& message) { failure_.fail(code, message); }
  void stopQueuePairs();

  int rank_;
  int nranks_;
  int timeoutMs_;
  TcpTransport* tcp_;
  ib::Settings settings_;
  size_t slotBytes_;  // our ring's slot size (header + chunk payload)
  uint32_t sendDepth_;
  uint32_t recvDepth_;
  std::unique_ptr<ib::Device> device_;
  std::vector<Peer> peers_;
  bool anyPeerFailed_ = false;

  AbortSignal abortSignal_;
  FailureLatch failure_{[this] { stopQueuePairs(); }};
};

}  // namespace tern
