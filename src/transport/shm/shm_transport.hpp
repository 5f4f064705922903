// Point-to-point transport between ranks of one host: a lock-free single-producer/single-consumer ring of
// fixed-size slots per ordered pair of ranks, in the producer's segment.
//
// Small and medium messages are copied through the ring (eager: the send completes once its bytes are in the
// ring, and the two copies of a long message overlap, producer filling slots while the consumer drains them).
// Large messages to a peer that can read our memory (same process, or cross-memory attach) go as one rendezvous
// slot holding the buffer's address: the receiver copies straight from the sender's buffer (process_vm_readv, one
// copy instead of two) and consumes the slot afterwards, which is what completes the send. A sender whose call fails
// with such a send pending withdraws it before its caller gets the buffer back (withdrawAfterFailure).
//
// Matching is FIFO per (peer, direction), as transport.hpp requires: a ring delivers messages in order, the first
// slot of each message carries its size, and a receive of another size is an error.
//
// Sleeping: each rank has a doorbell word; whoever produces into or consumes from a ring shared with a sleeping
// rank rings that rank's doorbell (only when it has registered as a sleeper, so the busy case costs no system call).
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "transport/shm/flag_wait.hpp"
#include "transport/shm/mesh.hpp"
#include "transport/shm/rendezvous_learner.hpp"
#include "transport/shm/watchdog.hpp"
#include "transport/transport.hpp"

namespace tern::shm {

class ShmTransport : public Transport {
 public:
  ShmTransport(Mesh* mesh, Watchdog* dog, const SpinPolicy& spin);

  const char* name() const override { return "shm"; }
  int progress(int waitMs) override;
  void abort(const std::string& reason) override { dog_->abort(reason); }
  bool hasPending() const override { return pending_ > 0; }
  // Raises `left` and waits (bounded by the timeout) for a peer reading one of this rank's rendezvous sends.
  void withdrawAfterFailure() override;
  bool sameHost(int peer) const override { return mesh_->peer(peer).local; }

  // Messages at least this long may go by rendezvous to peers that can read our memory: from the first size that
  // does not fit one ring slot, one kernel copy can beat two through the slots. Between threads of one process they
  // always do (one memcpy); between processes the receiver decides by size band from the transfers' times
  // (RendezvousLearner), starting from the host's prior: staged where its kernel copies ran under half of
  // memcpy's rate at setup (Mesh::kernelCopiesSlow), rendezvous otherwise.
  static constexpr size_t kRendezvousBytes = kRendezvousMinBytes;
  // Tests turn rendezvous off to push long messages through the ring between threads of one process.
  static void setRendezvousForTesting(bool enabled);
  // Sends of this process that went by rendezvous so far (tests check which way long messages took).
  static uint64_t rendezvousSendsForTesting();

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* transfer) override;
  void startRecv(int peer, const MemRef& dst, Transfer* transfer) override;

 private:
  struct SendOp {
    Transfer* transfer;
    const char* data;
    size_t bytes;
    size_t offset = 0;
    bool started = false;
    bool rendezvous = false;
  };
  struct AckWait {  // a rendezvous send, complete once the receiver consumed slot `slot`
    Transfer* transfer;
    uint64_t slot;
  };
  struct RecvOp {
    Transfer* transfer;
    char* data;
    size_t bytes;
    size_t offset = 0;
    bool started = false;
    bool rendezvous = false;    // the message came by rendezvous
    int64_t postedNs = 0;       // long messages: when this receive was posted
    int64_t senderStartNs = 0;  // long messages: when the sender started the message (its first slot's stamp)
  };
  struct PeerState {
    std::deque<SendOp> sends;
    std::deque<AckWait> acks;
    std::deque<RecvOp> recvs;
    uint64_t head = 0;      // our ring to the peer: slots produced (we are its only writer)
    uint64_t tailSeen = 0;  // our ring to the peer: slots the peer had consumed when we last looked
    uint64_t tail = 0;      // the peer's ring to us: slots consumed (we are its only writer)
    bool moved = false;     // this pass produced into or consumed from a ring shared with the peer: wake it if asleep
    RendezvousLearner learner{false, false};  // the form of the peer's long messages to us
  };

  int pass();
  int pushSends(int peer, PeerState& s);
  int reapAcks(int peer, PeerState& s);
  int pullRecvs(int peer, PeerState& s);
  // A long message from peer was received: its time goes to the peer's learner, which may ask for the other form.
  void learnFrom(int peer, PeerState& s, const RecvOp& r);
  void readRendezvous(int peer, RingHeader& ring, uint64_t slot, RecvOp& r, const SlotHeader& h);
  void copyRendezvous(int peer, RecvOp& r, const SlotHeader& h);
  void notify(int peer);
  // notify() for every peer whose rings this pass moved, with one fence for all of them.
  void notifyMoved();
  void throwIfFailed();
  // Once per sleep slice: throws for a peer that is gone with our transfers to it pending, after a last pass picks
  // up what it delivered before it went; returns the transfers that pass completed (they must be reported too).
  int checkPeers();
  bool pendingPeerOnAnotherCpu() const;

  Mesh* mesh_;
  Watchdog* dog_;
  SpinBudget spin_;
  int rank_;
  size_t payload_;  // bytes per slot after the header
  std::vector<PeerState> peers_;
  size_t pending_ = 0;
  bool movedLastPass_ = false;  // the last pass() moved a ring (bytes flow, even if no transfer completed)
  Clock::time_point lastProbe_;
};

}  // namespace tern::shm
