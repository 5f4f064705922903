#include "transport/tcp/tcp_transport.hpp"

#include <linux/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>

#include "base/auth.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

namespace tern {

namespace tcp_wire {

Mac acceptorProof(const Secret& secret, const JobId& jobId, const Hello& hello, const Nonce& acceptorNonce) {
  return MacBuilder(secret, "tern/tcp/v2/acceptor-to-initiator")
      .addValue(jobId)
      .addValue(hello)
      .addValue(acceptorNonce)
      .finish();
}

Mac initiatorProof(const Secret& secret, const JobId& jobId, const Hello& hello, const Nonce& acceptorNonce) {
  return MacBuilder(secret, "tern/tcp/v2/initiator-to-acceptor")
      .addValue(jobId)
      .addValue(hello)
      .addValue(acceptorNonce)
      .finish();
}

bool checkNotice(Notice& notice, int from, int nranks, std::string* why) {
  notice.text[sizeof(notice.text) - 1] = '\0';
  if (notice.magic != kNoticeMagic) {
    *why = "not a notice (bad magic)";
  } else if (notice.kind < kNoticePing || notice.kind > kNoticeFailed) {
    *why = format("unknown notice kind %u", notice.kind);
  } else if (notice.from != from) {
    *why = format("a notice claiming to come from rank %d", notice.from);
  } else if (notice.kind == kNoticeFailed &&
             (notice.lost < -1 || notice.lost >= nranks || notice.detector < 0 || notice.detector >= nranks)) {
    *why = format("a failure notice naming ranks out of range (lost %d, detector %d)", notice.lost, notice.detector);
  } else {
    return true;
  }
  return false;
}

size_t stripedChunkCount(size_t bytes, int sockets) {
  if (bytes < kStripeThreshold || sockets < 2) return 0;
  const size_t even = bytes / (static_cast<size_t>(sockets) * kChunksPerSocket) & ~static_cast<size_t>(4095);
  const size_t chunk = std::clamp(even, kMinStripeChunk, kMaxStripeChunk);
  return (bytes + chunk - 1) / chunk;
}

size_t chunkBytes(size_t bytes, uint32_t parts) {
  if (parts == 0) return 0;
  const size_t chunk = ((bytes + parts - 1) / parts + 4095) & ~static_cast<size_t>(4095);
  // Every part must start inside the message: a part count that pages cannot cut it into is not a chunking.
  if (chunk == 0 || (bytes + chunk - 1) / chunk != parts) return 0;
  return chunk;
}

}  // namespace tcp_wire

namespace {

// The longest a failure notice waits for a peer's socket to take it: the peer may be stopped.
constexpr auto kNoticeSendWait = std::chrono::milliseconds(100);
// How often a wait in another transport serves the control connections through peerClosed().
constexpr auto kControlServiceInterval = std::chrono::milliseconds(5);

// "rank L lost (detected by rank D): text", or "rank D failed: text" when no rank was lost.
std::string describeLoss(int lost, int detector, const std::string& text) {
  if (lost < 0) return format("rank %d failed: %s", detector, text.c_str());
  return format("rank %d lost (detected by rank %d): %s", lost, detector, text.c_str());
}

size_t chunkLength(size_t bytes, size_t chunk, size_t part) { return std::min(chunk, bytes - part * chunk); }

}  // namespace

TcpTransport::TcpTransport(int rank, int nranks, int socketsPerPeer)
    : rank_(rank),
      nranks_(nranks),
      socketsPerPeer_(socketsPerPeer),
      channels_(nranks, std::vector<Channel>(socketsPerPeer)),
      unassignedSends_(nranks),
      stripedRecvs_(nranks),
      stripes_(nranks, true),
      rateCheckedAt_(nranks),
      sendSequence_(nranks, 0),
      recvSequence_(nranks, 0),
      peerAddress_(nranks),
      sameHost_(nranks, false) {}

TcpTransport::~TcpTransport() {
  for (auto& peer : channels_) {
    for (auto& c : peer) {
      if (c.fd >= 0) ::close(c.fd);
    }
  }
  for (auto& c : control_) {
    if (c.fd >= 0) ::close(c.fd);
  }
}

namespace {

// Our connection to a higher rank's listener, from connect to the acceptor's Accept.
struct Outgoing {
  int peer = -1;
  int socket = -1;
  std::unique_ptr<FrameConn> conn;
  tcp_wire::Hello hello;
  bool challenged = false;
  bool done = false;
  Clock::time_point retryAt{};
  std::chrono::milliseconds backoff{10};
};

// A connection to our listener, until it proves to be a lower rank of this job (or is dropped).
struct Incoming {
  std::unique_ptr<FrameConn> conn;
  tcp_wire::Hello hello;
  Nonce nonce{};
  bool helloSeen = false;
};

class PeerConnector {
 public:
  PeerConnector(TcpTransport::Setup& s) : s_(s) {}

  void run() {
    for (int p = s_.rank + 1; p < s_.nranks; ++p) {
      for (int k = 0; k < s_.socketsPerPeer; ++k) {
        Outgoing o;
        o.peer = p;
        o.socket = k;
        start(o);
        outgoing_.push_back(std::move(o));
      }
    }
    remainingOut_ = outgoing_.size();
    remainingIn_ = static_cast<size_t>(s_.rank) * static_cast<size_t>(s_.socketsPerPeer);
    setNonBlocking(s_.listener, true);
    while (remainingOut_ + remainingIn_ > 0) {
      if (s_.abortFlag != nullptr && s_.abortFlag->load()) {
        throwError(ternRemoteError, "tcp: rank %d: communicator aborted while connecting to its peers", s_.rank);
      }
      if (Clock::now() >= s_.deadline) throwTimeout();
      pollOnce();
    }
    if (dropped_ > 0) {
      TERN_LOG(kInfo, kNet, s_.rank, "dropped %d incoming connection(s) that did not authenticate", dropped_);
    }
  }

 private:
  // (Re)connects o and sends its hello with a fresh nonce.
  void start(Outgoing& o) {
    const SocketAddress& addr = s_.peers[o.peer].address;
    Fd fd = connectTo(addr, s_.deadline, s_.abortFlag);
    o.conn = std::make_unique<FrameConn>(std::move(fd), addr, s_.deadline);
    o.hello = tcp_wire::Hello();
    o.hello.fromRank = s_.rank;
    o.hello.toRank = o.peer;
    o.hello.socketIndex = o.socket;
    o.hello.nonce = freshNonce();
    o.challenged = false;
    o.conn->queue(&o.hello, sizeof(o.hello));
    o.conn->expect(sizeof(tcp_wire::Challenge));
  }

  [[noreturn]] void throwTimeout() {
    std::string missing;
    for (const auto& o : outgoing_) {
      if (!o.done) missing += format(" %d", o.peer);
    }
    for (int p = 0; p < s_.rank; ++p) {
      for (int k = 0; k < s_.socketsPerPeer; ++k) {
        if (s_.channels[p][k] < 0) {
          missing += format(" %d", p);
          break;
        }
      }
    }
    throwError(ternTimeout, "tcp: rank %d: timed out (TERN_TIMEOUT) connecting to rank(s)%s", s_.rank, missing.c_str());
  }

  void pollOnce() {
    std::vector<pollfd> fds;
    fds.push_back({remainingIn_ > 0 ? s_.listener : -1, POLLIN, 0});
    for (auto& o : outgoing_) {
      if (!o.done && !o.conn && Clock::now() >= o.retryAt) start(o);
      const bool idle = o.done || !o.conn;
      fds.push_back({idle ? -1 : o.conn->fd(), idle ? short(0) : o.conn->pollEvents(), 0});
    }
    for (auto& in : incoming_) fds.push_back({in.conn->fd(), in.conn->pollEvents(), 0});
    Clock::time_point wake = std::min(s_.deadline, Clock::now() + std::chrono::milliseconds(100));
    for (auto& in : incoming_) wake = std::min(wake, in.conn->deadline());
    for (auto& o : outgoing_) {
      if (!o.done && !o.conn) wake = std::min(wake, o.retryAt);
    }
    auto waitMs = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count();
    int r = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(waitMs, 0) + 1));
    if (r < 0 && errno != EINTR) throwSystemError("tcp: poll");
    for (size_t i = 0; i < outgoing_.size(); ++i) {
      if (fds[1 + i].revents != 0) serve(outgoing_[i]);
    }
    std::vector<bool> ready(incoming_.size());
    for (size_t i = 0; i < incoming_.size(); ++i) ready[i] = fds[1 + outgoing_.size() + i].revents != 0;
    std::deque<Incoming> keep;
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < incoming_.size(); ++i) {
      Incoming& in = incoming_[i];
      if (ready[i] && !serve(in)) continue;
      if (now >= in.conn->deadline()) {
        TERN_LOG(kTrace, kNet, s_.rank, "dropped %s: no handshake within the window",
                 in.conn->peer().toString().c_str());
        ++dropped_;
        continue;
      }
      keep.push_back(std::move(in));
    }
    incoming_ = std::move(keep);
    if (fds[0].revents != 0) acceptNew();
  }

  void serve(Outgoing& o) {
    const std::string addr = o.conn->peer().toString();
    try {
      if (!o.conn->advance()) return;
    } catch (const Error& e) {
      // The acceptor drops the oldest unauthenticated connections when strangers crowd it: connect again.
      TERN_LOG(kTrace, kNet, s_.rank, "reconnecting to rank %d at %s: %s", o.peer, addr.c_str(), e.what());
      o.conn.reset();
      o.retryAt = Clock::now() + o.backoff;
      o.backoff = std::min(o.backoff * 2, std::chrono::milliseconds(200));
      return;
    }
    if (!o.challenged) {
      tcp_wire::Challenge challenge;
      std::memcpy(&challenge, o.conn->frame(), sizeof(challenge));
      if (challenge.magic != tcp_wire::kHelloMagic || challenge.version != tcp_wire::kVersion ||
          !macEqual(challenge.proof, tcp_wire::acceptorProof(s_.secret, s_.jobId, o.hello, challenge.nonce))) {
        throwError(ternRemoteError,
                   "tcp: rank %d: authentication failed: the peer listening at %s (rank %d in the bootstrap table) "
                   "did not prove it knows the job secret; nothing was sent to it",
                   s_.rank, addr.c_str(), o.peer);
      }
      tcp_wire::Proof proof;
      proof.proof = tcp_wire::initiatorProof(s_.secret, s_.jobId, o.hello, challenge.nonce);
      o.conn->queue(&proof, sizeof(proof));
      o.conn->expect(sizeof(tcp_wire::Accept));
      o.challenged = true;
      serve(o);
      return;
    }
    tcp_wire::Accept accept;
    std::memcpy(&accept, o.conn->frame(), sizeof(accept));
    if (accept.magic != tcp_wire::kAcceptMagic) {
      throwError(ternRemoteError, "tcp: rank %d: rank %d at %s sent a malformed handshake answer", s_.rank, o.peer,
                 addr.c_str());
    }
    s_.channels[o.peer][o.socket] = o.conn->releaseFd().release();
    o.conn.reset();
    o.done = true;
    --remainingOut_;
  }

  void acceptNew() {
    const size_t cap = kMaxStrangers + remainingIn_;
    for (int i = 0; i < 64; ++i) {
      SocketAddress peer;
      bool outOfFds = false;
      Fd fd = acceptNow(s_.listener, &peer, &outOfFds);
      if (!fd) {
        if (outOfFds) dropOldest();
        return;
      }
      if (incoming_.size() >= cap) dropOldest();
      Incoming in;
      in.conn =
          std::make_unique<FrameConn>(std::move(fd), peer, std::min(s_.deadline, Clock::now() + kHandshakeWindow));
      in.conn->expect(sizeof(tcp_wire::Hello));
      incoming_.push_back(std::move(in));
    }
  }

  void dropOldest() {
    if (incoming_.empty()) return;
    TERN_LOG(kTrace, kNet, s_.rank, "too many unauthenticated connections, dropped the oldest (%s)",
             incoming_.front().conn->peer().toString().c_str());
    incoming_.pop_front();
    ++dropped_;
  }

  // False when in is finished with (dropped, or now a channel).
  bool serve(Incoming& in) {
    const std::string from = in.conn->peer().toString();
    try {
      if (!in.conn->advance()) return true;
      if (!in.helloSeen) {
        std::memcpy(&in.hello, in.conn->frame(), sizeof(in.hello));
        const tcp_wire::Hello& h = in.hello;
        if (h.magic != tcp_wire::kHelloMagic || h.version != tcp_wire::kVersion || h.toRank != s_.rank ||
            h.fromRank < 0 || h.fromRank >= s_.rank || h.socketIndex < 0 || h.socketIndex >= s_.socketsPerPeer) {
          TERN_LOG(kTrace, kNet, s_.rank, "dropped %s: not a peer handshake of this job (rank %d socket %d)",
                   from.c_str(), h.fromRank, h.socketIndex);
          ++dropped_;
          return false;
        }
        in.helloSeen = true;
        in.nonce = freshNonce();
        tcp_wire::Challenge challenge;
        challenge.nonce = in.nonce;
        challenge.proof = tcp_wire::acceptorProof(s_.secret, s_.jobId, in.hello, in.nonce);
        in.conn->queue(&challenge, sizeof(challenge));
        in.conn->expect(sizeof(tcp_wire::Proof));
        // The proof may arrive within this very call: then no later poll would report it.
        return serve(in);
      }
      tcp_wire::Proof proof;
      std::memcpy(&proof, in.conn->frame(), sizeof(proof));
      if (proof.magic != tcp_wire::kHelloMagic ||
          !macEqual(proof.proof, tcp_wire::initiatorProof(s_.secret, s_.jobId, in.hello, in.nonce))) {
        TERN_LOG(kWarn, kNet, s_.rank,
                 "refused a connection from %s claiming to be rank %d: authentication failed (it does not know the "
                 "job secret)",
                 from.c_str(), in.hello.fromRank);
        ++dropped_;
        return false;
      }
      int& slot = s_.channels[in.hello.fromRank][in.hello.socketIndex];
      if (slot >= 0) {
        TERN_LOG(kWarn, kNet, s_.rank, "dropped a second connection from rank %d socket %d (%s)", in.hello.fromRank,
                 in.hello.socketIndex, from.c_str());
        return false;
      }
      tcp_wire::Accept accept;
      in.conn->queue(&accept, sizeof(accept));
      in.conn->flush(s_.deadline, s_.abortFlag);
      slot = in.conn->releaseFd().release();
      --remainingIn_;
      return false;
    } catch (const Error& e) {
      TERN_LOG(kTrace, kNet, s_.rank, "dropped an incoming connection from %s: %s", from.c_str(), e.what());
      ++dropped_;
      return false;
    }
  }

  TcpTransport::Setup& s_;
  std::vector<Outgoing> outgoing_;
  std::deque<Incoming> incoming_;  // oldest first
  size_t remainingOut_ = 0;
  size_t remainingIn_ = 0;
  int dropped_ = 0;
};

}  // namespace

std::unique_ptr<TcpTransport> TcpTransport::connect(int rank, int nranks, BootstrapResult& boot, const Secret& secret,
                                                    int socketsPerPeer, Clock::time_point deadline,
                                                    const std::atomic<bool>* abortFlag) {
  if (socketsPerPeer < 1) socketsPerPeer = 1;
  if (socketsPerPeer > 16) socketsPerPeer = 16;
  if (static_cast<int>(boot.peers.size()) != nranks || rank < 0 || rank >= nranks) {
    throwError(ternInternalError, "tcp: rank %d of %d got a bootstrap table of %zu ranks", rank, nranks,
               boot.peers.size());
  }
  std::unique_ptr<TcpTransport> t(new TcpTransport(rank, nranks, socketsPerPeer));
  for (int p = 0; p < nranks; ++p) {
    t->peerAddress_[p] = boot.peers[p].address.toString();
    t->sameHost_[p] = boot.peers[p].hostId == boot.peers[rank].hostId;
    for (int s = 0; s < socketsPerPeer; ++s) {
      t->channels_[p][s].peer = p;
      t->channels_[p][s].index = s;
    }
  }
  // Whether to busy-poll: by the ranks on this machine, which TERN_HOSTID may have split into several hosts that
  // still share its CPUs.
  const bool ownCpus = machineRanksOwnCpus(boot, rank);
  t->spin_ = SpinBudget(spinPolicyFor(ownCpus));
  TERN_LOG(kInfo, kNet, rank, "%s: waits %s",
           ownCpus ? "the ranks on this machine own their CPUs" : "the ranks on this machine outnumber its CPUs",
           t->spin_.policy().maxSpinNs > 0 ? "busy-poll before they sleep" : "do not busy-poll");
  // The control connection is the last socket index of each pair, made by the same authenticated handshake.
  const int connections = socketsPerPeer + (nranks >= 3 ? 1 : 0);
  std::vector<std::vector<int>> fds(nranks, std::vector<int>(connections, -1));
  Setup setup{rank, nranks, connections, boot.peers, boot.listener.get(), secret, boot.jobId, deadline, abortFlag, fds};
  try {
    PeerConnector(setup).run();
  } catch (...) {
    for (auto& peer : fds) {
      for (int fd : peer) {
        if (fd >= 0) ::close(fd);
      }
    }
    throw;
  }
  boot.listener.reset();
  for (int p = 0; p < nranks; ++p) {
    for (int s = 0; s < socketsPerPeer; ++s) t->channels_[p][s].fd = fds[p][s];
  }
  if (connections > socketsPerPeer) {
    t->control_.resize(nranks);
    for (int p = 0; p < nranks; ++p) {
      t->control_[p].fd = fds[p][socketsPerPeer];
      if (p != rank) setNonBlocking(fds[p][socketsPerPeer], true);
    }
  }
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    for (auto& c : t->channels_[p]) setNonBlocking(c.fd, true);
    TERN_LOG(kInfo, kNet, rank, "connected to rank %d at %s over %d TCP socket(s)%s", p, t->peerAddress_[p].c_str(),
             socketsPerPeer, t->sameHost_[p] ? " (same host)" : "");
  }
  return t;
}

void TcpTransport::startSend(int peer, const ConstMemRef& src, Transfer* transfer) {
  post(peer, const_cast<char*>(static_cast<const char*>(src.data)), src.bytes, transfer, true);
}

void TcpTransport::startRecv(int peer, const MemRef& dst, Transfer* transfer) {
  post(peer, static_cast<char*>(dst.data), dst.bytes, transfer, false);
}

void TcpTransport::post(int peer, char* data, size_t bytes, Transfer* transfer, bool isSend) {
  throwIfFailed();
  if (peer < 0 || peer >= nranks_ || peer == rank_) {
    throwError(ternInternalError, "tcp: rank %d posted a transfer to invalid peer %d", rank_, peer);
  }
  uint64_t seq = isSend ? sendSequence_[peer]++ : recvSequence_[peer]++;
  // A same-host peer is reached over loopback, where every byte is copied by the calling thread on both ends:
  // more streams only add context switches and cache misses (measured: 256 MB allreduce 1.45 -> 1.8 GB/s on two
  // cores with one socket), so it gets one socket; striping pays off across a real NIC.
  const int sockets = sameHost_[peer] ? 1 : socketsPerPeer_;
  transfer->done = false;
  transfer->bytes = bytes;
  const size_t stripedParts = tcp_wire::stripedChunkCount(bytes, sockets);
  if (stripedParts == 0) {
    transfer->pendingParts = 1;
    Part part{transfer, data, bytes};
    part.header = {seq, 0, 1, bytes, bytes};
    const auto socket = static_cast<int>(seq % static_cast<uint64_t>(sockets));
    if (isSend) {
      queueSend(peer, socket, part);
    } else {
      channels_[peer][socket].recvs.push_back(part);
    }
    return;
  }
  if (!isSend) {
    // The sender chooses the chunking (its first chunk's header tells it); see stripesTo().
    stripedRecvs_[peer].push_back(StripedRecv{seq, transfer, data, bytes, 0, 0, 0, {}});
    return;
  }
  if (!stripesTo(peer)) {
    // One chunk, always on the first socket: on a link one stream fills, a second stream only competes with it.
    transfer->pendingParts = 1;
    Part part{transfer, data, bytes};
    part.header = {seq, 0, 1, bytes, bytes};
    queueSend(peer, 0, part);
    return;
  }
  const auto parts = static_cast<uint32_t>(stripedParts);
  const size_t chunk = tcp_wire::chunkBytes(bytes, parts);
  transfer->pendingParts = parts;
  for (uint32_t i = 0; i < parts; ++i) {
    Part part{transfer, data + i * chunk, chunkLength(bytes, chunk, i)};
    part.chunk = true;
    part.header = {seq, i, parts, bytes, part.bytes};
    unassignedSends_[peer].push_back(part);
  }
}

// Each socket must carry its items in sequence order: a receiver that meets the header of a message it has not
// posted yet stops reading that socket until it does, so an earlier message behind it on the same socket (one the
// receiver waits for before it posts the later one) would never arrive. A whole message therefore goes straight to
// its socket only while no chunk of an earlier message is still unassigned; otherwise it queues behind them, and a
// socket takes queued items in order (driveSends).
void TcpTransport::queueSend(int peer, int socket, Part part) {
  part.socket = socket;
  if (unassignedSends_[peer].empty()) {
    channels_[peer][socket].sends.push_back(part);
  } else {
    unassignedSends_[peer].push_back(part);
  }
}

bool TcpTransport::stripesTo(int peer) {
  // The kernel's estimate of the rate the first socket delivers at, refreshed at most every kRateRefresh: striping
  // pays where one stream cannot fill the link (fast NICs, where one core's copies bound a stream), not on a link
  // that one stream fills (where a second one only competes with it and leaves it finishing alone). Samples taken
  // while the stream was limited by us, not by the network, say nothing about the link and are skipped.
  constexpr auto kRateRefresh = std::chrono::milliseconds(20);
  constexpr uint64_t kStripeMinBytesPerSecond = 500'000'000;  // 4 Gb/s
  const Clock::time_point now = Clock::now();
  if (now - rateCheckedAt_[peer] < kRateRefresh) return stripes_[peer];
  rateCheckedAt_[peer] = now;
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (::getsockopt(channels_[peer][0].fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0 &&
      length >= offsetof(tcp_info, tcpi_delivery_rate) + sizeof(info.tcpi_delivery_rate) &&
      info.tcpi_delivery_rate > 0 && info.tcpi_delivery_rate_app_limited == 0) {
    stripes_[peer] = info.tcpi_delivery_rate >= kStripeMinBytesPerSecond;
  }
  return stripes_[peer];
}

bool TcpTransport::wantsSend(const Channel& c) const { return !c.sends.empty() || !unassignedSends_[c.peer].empty(); }

bool TcpTransport::wantsRecv(const Channel& c) const {
  if (c.chunkOf != nullptr) return true;
  if (c.ended) {  // driveRecvs fails a receive that can no longer arrive
    if (!c.recvs.empty()) return true;
    if (stripedRecvs_[c.peer].empty()) return false;
    return std::all_of(channels_[c.peer].begin(), channels_[c.peer].end(),
                       [](const Channel& other) { return other.fd < 0 || other.ended; });
  }
  // A header held for a receive that is not posted yet: nothing more is read from this socket until it is.
  if (c.pendingDone == sizeof(Header)) return c.pending.sequence < recvSequence_[c.peer];
  return !c.recvs.empty() || !stripedRecvs_[c.peer].empty();
}

void TcpTransport::throwIfAborted() {
  if (abortSignal_.raised()) throw Error(ternRemoteError, abortSignal_.errorMessage(rank_));
}

void TcpTransport::throwIfFailed() {
  throwIfAborted();
  if (failure_) throw Error(*failure_);
}

void TcpTransport::connectionLost(const Channel& c, const char* during, int err) {
  if (abortSignal_.raised()) throwIfAborted();
  if (err == 0) {
    throwError(ternRemoteError,
               "rank %d: connection to rank %d (%s) closed by the peer during %s (the peer exited, was killed, or "
               "aborted)",
               rank_, c.peer, peerAddress_[c.peer].c_str(), during);
  }
  throwError(ternRemoteError, "rank %d: connection to rank %d (%s) lost during %s: %s", rank_, c.peer,
             peerAddress_[c.peer].c_str(), during, std::strerror(err));
}

int TcpTransport::driveSends(Channel& c) {
  int completed = 0;
  bool tookChunk = false;
  for (;;) {
    if (c.sends.empty()) {
      // This socket took all it had: it takes the next queued item. A chunk of a striped message, one per pass, so
      // that the peer's other sockets get theirs before a socket whose buffer takes everything at once (a fast
      // link's) carries the whole message alone; a whole message only when it is this socket's (the others take
      // nothing past it meanwhile).
      std::deque<Part>& queued = unassignedSends_[c.peer];
      if (queued.empty()) break;
      Part& next = queued.front();
      if (next.chunk ? tookChunk : next.socket != c.index) break;
      tookChunk = tookChunk || next.chunk;
      c.sends.push_back(next);
      queued.pop_front();
    }
    Part& p = c.sends.front();
    iovec iov[2];
    int n = 0;
    if (p.headerDone < sizeof(Header)) {
      iov[n++] = {reinterpret_cast<char*>(&p.header) + p.headerDone, sizeof(Header) - p.headerDone};
    }
    if (p.done < p.bytes) iov[n++] = {p.data + p.done, p.bytes - p.done};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    // MSG_EOR: when this call writes the rest of the part, its last segment goes out now instead of waiting, corked,
    // for earlier segments to leave the host (TCP autocorking). The kernel releases corked data from a softirq after
    // those segments' transmission, which waits behind the busy rank on its own CPU when there is no NIC interrupt
    // to run it (veth, shaped links); a peer blocked on the message's tail then stalls for milliseconds.
    ssize_t sent = n > 0 ? ::sendmsg(c.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_EOR) : 0;
    if (sent < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        // A chunk this full socket has not started goes back, for whichever socket drains first.
        // Only when nothing queued behind it on this socket, which would then overtake it.
        if (p.headerDone == 0 && p.chunk && c.sends.size() == 1) {
          unassignedSends_[c.peer].push_front(p);
          c.sends.pop_front();
        }
        break;
      }
      connectionLost(c, "send", errno);
    }
    size_t s = static_cast<size_t>(sent);
    bytesMoved_ += s;
    size_t h = std::min(s, sizeof(Header) - p.headerDone);
    p.headerDone += h;
    p.done += s - h;
    if (p.headerDone == sizeof(Header) && p.done == p.bytes) {
      if (--p.owner->pendingParts == 0) {
        p.owner->done = true;
        ++completed;
      }
      c.sends.pop_front();
    } else {
      break;  // the socket buffer is full
    }
  }
  return completed;
}

bool TcpTransport::readPayload(Channel& c, char* data, size_t bytes, size_t& done) {
  while (done < bytes) {
    ssize_t n = ::recv(c.fd, data + done, bytes - done, MSG_DONTWAIT);
    if (n == 0) connectionLost(c, "receive", 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
      connectionLost(c, "receive", errno);
    }
    bytesMoved_ += static_cast<size_t>(n);
    done += static_cast<size_t>(n);
  }
  return true;
}

bool TcpTransport::readChunkHeader(Channel& c) {
  char* header = reinterpret_cast<char*>(&c.pending);
  while (c.pendingDone < sizeof(Header)) {
    ssize_t n = ::recv(c.fd, header + c.pendingDone, sizeof(Header) - c.pendingDone, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
      connectionLost(c, "receive", errno);
    }
    if (n == 0) {
      if (c.pendingDone > 0) connectionLost(c, "receive", 0);  // cut inside a header
      c.ended = true;
      if (wantsRecv(c)) connectionLost(c, "receive", 0);  // every socket of the peer ended, a message still owed
      return false;
    }
    bytesMoved_ += static_cast<size_t>(n);
    c.pendingDone += static_cast<size_t>(n);
  }
  return true;
}

bool TcpTransport::dispatchHeader(Channel& c) {
  const Header& h = c.pending;
  if (!c.recvs.empty() && h.sequence == c.recvs.front().header.sequence) {
    Part& p = c.recvs.front();
    p.received = h;
    p.headerDone = sizeof(Header);
    c.pendingDone = 0;
    checkHeader(c, p);
    return true;
  }
  for (StripedRecv& s : stripedRecvs_[c.peer]) {
    if (s.sequence != h.sequence) continue;
    checkChunk(c, s, h);
    if (s.parts == 0) {  // the first chunk to arrive says how the sender cut the message
      s.parts = h.parts;
      s.chunk = tcp_wire::chunkBytes(s.bytes, h.parts);
      s.arrived.assign(h.parts, false);
      checkChunk(c, s, h);
    }
    s.arrived[h.part] = true;
    c.chunkOf = &s;
    c.chunkOffset = static_cast<size_t>(h.part) * s.chunk;
    c.chunkBytes = h.partBytes;
    c.chunkDone = 0;
    c.pendingDone = 0;
    return true;
  }
  if (h.sequence >= recvSequence_[c.peer]) return false;  // for a receive not posted yet: held
  throwError(ternInternalError, "rank %d: stream from rank %d out of step (message %llu part %u of %u, not expected)",
             rank_, c.peer, static_cast<unsigned long long>(h.sequence), h.part, h.parts);
}

// A socket carries whole messages (c.recvs, in order) and, between ranks that stripe, chunks of striped messages
// in whatever order the sender's sockets took them. While no striped message older than the next whole one is
// still arriving, nothing else can come first on this socket, so the next whole message's header and payload are
// read in one call (a small message is one receive); otherwise the header is read alone and says where its payload
// goes.
int TcpTransport::driveRecvs(Channel& c) {
  int completed = 0;
  if (c.ended) connectionLost(c, "receive", 0);  // wantsRecv: a receive that can no longer arrive
  std::deque<StripedRecv>& striped = stripedRecvs_[c.peer];
  for (;;) {
    if (c.chunkOf != nullptr) {
      StripedRecv& s = *c.chunkOf;
      if (!readPayload(c, s.data + c.chunkOffset, c.chunkBytes, c.chunkDone)) return completed;
      c.chunkOf = nullptr;
      if (++s.received == s.parts) {
        s.owner->done = true;  // the owner may be gone from here on: the entry no longer touches it
        ++completed;
        while (!striped.empty() && striped.front().complete()) striped.pop_front();
      }
      continue;
    }
    if (!c.recvs.empty() && c.recvs.front().headerDone == sizeof(Header)) {
      Part& p = c.recvs.front();
      if (!readPayload(c, p.data, p.bytes, p.done)) return completed;
      p.owner->done = true;
      ++completed;
      c.recvs.pop_front();
      continue;
    }
    if (c.pendingDone == 0 && !c.recvs.empty() &&
        (c.recvs.front().headerDone > 0 || striped.empty() ||
         striped.front().sequence > c.recvs.front().header.sequence)) {
      // The header and whatever of the payload has arrived, in one call: the payload's size is our own call's,
      // and a header that does not match it fails the stream whatever was read along with it.
      Part& p = c.recvs.front();
      iovec iov[2] = {{reinterpret_cast<char*>(&p.received) + p.headerDone, sizeof(Header) - p.headerDone},
                      {p.data, p.bytes}};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = p.bytes > 0 ? 2 : 1;
      ssize_t n = ::recvmsg(c.fd, &msg, MSG_DONTWAIT);
      if (n == 0) connectionLost(c, "receive", 0);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return completed;
        connectionLost(c, "receive", errno);
      }
      const size_t got = static_cast<size_t>(n);
      bytesMoved_ += got;
      const size_t header = std::min(got, sizeof(Header) - p.headerDone);
      p.headerDone += header;
      p.done += got - header;
      if (p.headerDone < sizeof(Header)) return completed;
      checkHeader(c, p);
      continue;
    }
    if (c.pendingDone < sizeof(Header)) {
      if (c.recvs.empty() && striped.empty()) return completed;  // nothing is expected on this socket
      if (c.recvs.empty() ? !readChunkHeader(c)
                          : !readPayload(c, reinterpret_cast<char*>(&c.pending), sizeof(Header), c.pendingDone)) {
        return completed;
      }
    }
    if (!dispatchHeader(c)) return completed;
  }
}

void TcpTransport::checkHeader(const Channel& c, const Part& p) const {
  const Header& want = p.header;
  const Header& got = p.received;
  if (got.totalBytes != want.totalBytes) {
    throwError(ternInvalidUsage,
               "rank %d: rank %d sent a message of %llu bytes where %llu were expected (did the ranks call the same "
               "collective with the same count, datatype and root?)",
               rank_, c.peer, static_cast<unsigned long long>(got.totalBytes),
               static_cast<unsigned long long>(want.totalBytes));
  }
  if (got.sequence != want.sequence || got.part != want.part || got.partBytes != want.partBytes) {
    throwError(ternInternalError,
               "rank %d: stream from rank %d out of step (message %llu part %u, expected %llu part %u)", rank_, c.peer,
               static_cast<unsigned long long>(got.sequence), got.part, static_cast<unsigned long long>(want.sequence),
               want.part);
  }
}

void TcpTransport::checkChunk(const Channel& c, const StripedRecv& s, const Header& h) const {
  if (h.totalBytes != s.bytes) {
    throwError(ternInvalidUsage,
               "rank %d: rank %d sent a message of %llu bytes where %llu were expected (did the ranks call the same "
               "collective with the same count, datatype and root?)",
               rank_, c.peer, static_cast<unsigned long long>(h.totalBytes), static_cast<unsigned long long>(s.bytes));
  }
  if (s.parts == 0) {  // the first chunk: its count must cut the message into pages
    if (tcp_wire::chunkBytes(s.bytes, h.parts) != 0) return;
    throwError(ternInternalError,
               "rank %d: stream from rank %d out of step (message %llu of %llu bytes claims %u chunks, which do not "
               "cut it into pages)",
               rank_, c.peer, static_cast<unsigned long long>(h.sequence), static_cast<unsigned long long>(s.bytes),
               h.parts);
  }
  if (h.parts != s.parts || h.part >= s.parts || h.partBytes != chunkLength(s.bytes, s.chunk, h.part) ||
      s.arrived[h.part]) {
    throwError(ternInternalError,
               "rank %d: stream from rank %d out of step (message %llu: chunk %u of %u, %llu bytes; expected %u "
               "chunks%s)",
               rank_, c.peer, static_cast<unsigned long long>(h.sequence), h.part, h.parts,
               static_cast<unsigned long long>(h.partBytes), s.parts,
               h.part < s.parts && s.arrived[h.part] ? ", that one already received" : "");
  }
}

int TcpTransport::drive(Channel& c) {
  int completed = 0;
  if (wantsRecv(c)) completed += driveRecvs(c);
  if (wantsSend(c)) completed += driveSends(c);
  return completed;
}

int TcpTransport::progress(int waitMs) {
  throwIfFailed();
  try {
    return progressOnce(waitMs);
  } catch (const Error& e) {
    if (!failure_) failure_ = std::make_unique<Error>(e);
    throw;
  }
}

int TcpTransport::progressOnce(int waitMs) {
  throwIfAborted();
  if (noticed_.load(std::memory_order_acquire)) throwNotice();
  int completed = 0;
  for (auto& peer : channels_) {
    for (auto& c : peer) {
      if (c.fd >= 0) completed += drive(c);
    }
  }
  if (completed > 0 || waitMs <= 0) return completed;
  completed = spinForCompletion(waitMs);
  if (completed > 0) return completed;

  // Nothing finished: sleep until a socket we need becomes ready (or abort wakes us).
  std::vector<pollfd> fds;
  std::vector<Channel*> owners;
  fds.push_back({abortSignal_.wakeFd(), POLLIN, 0});
  owners.push_back(nullptr);
  for (auto& peer : channels_) {
    for (auto& c : peer) {
      short events = 0;
      if (wantsSend(c)) events |= POLLOUT;
      if (wantsRecv(c)) events |= POLLIN;
      if (events != 0) {
        fds.push_back({c.fd, events, 0});
        owners.push_back(&c);
      }
    }
  }
  if (fds.size() == 1) return 0;
  // Sleeping: a ping or a peer's failure notice must wake us as well.
  const size_t dataFds = fds.size();
  for (const auto& c : control_) {
    if (c.fd >= 0 && !c.closed) fds.push_back({c.fd, POLLIN, 0});
  }
  int r = ::poll(fds.data(), fds.size(), waitMs > 100 ? 100 : waitMs);
  if (r < 0 && errno != EINTR) throwSystemError("tcp: poll");
  throwIfAborted();
  for (size_t i = dataFds; i < fds.size(); ++i) {
    if (fds[i].revents != 0) {
      {
        std::unique_lock<std::mutex> lock(controlMutex_, std::try_to_lock);
        if (lock.owns_lock()) serveControl();
      }
      if (noticed_.load(std::memory_order_acquire)) throwNotice();
      break;
    }
  }
  for (size_t i = 1; i < dataFds; ++i) {
    if (fds[i].revents != 0) completed += drive(*owners[i]);
  }
  return completed;
}

// Before progressOnce sleeps in poll(), it keeps driving the sockets that have work for as long as bytes keep
// moving, and for up to the adaptive spin budget (transport/spin_policy.hpp) after the last byte moved: a small
// message from a peer that is already running arrives within microseconds, and a large one streams in, while
// waking from poll() costs a sleeping vCPU's wake-up, several times a small message's own latency. Each round is
// one non-blocking send or receive per busy socket, so a spin never holds anything the peer needs; it ends by
// waitMs at the latest, like the sleep it replaces. Bytes moving keep the spin going only while they move faster
// than kStreamingBytesPerNs: a link slower than that (a shaped or wide-area one) trickles a few bytes into every
// round, and spinning through its whole transfer would take the CPU from ranks that compute beside us while poll()
// costs little against the transfer's own time.
int TcpTransport::spinForCompletion(int waitMs) {
  constexpr double kStreamingBytesPerNs = 0.5;  // 500 MB/s: loopback and fast NICs stream, 1 Gb/s links do not
  // Ranks that outnumber the CPUs yield between rounds, for up to the policy's yield poll: the peer we wait for is
  // most likely queued behind another rank, and yielding runs it (transport/spin_policy.hpp). Only where we wait for
  // a peer of our own host: one on another host is not queued on our CPUs, and its bytes come at the link's pace
  // (where the job's "hosts" share one machine, as network namespaces do, they still cross a link of their own).
  const bool yieldPoll = spin_.yieldNs() > 0 && waitsOnSameHostPeer();
  const auto budget = std::chrono::nanoseconds(yieldPoll ? std::max(spin_.ns(), spin_.yieldNs()) : spin_.ns());
  if (budget.count() <= 0) return 0;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::milliseconds(waitMs);
  Clock::time_point idleUntil = start + budget;
  const uint64_t movedAtStart = bytesMoved_;
  uint64_t moved = bytesMoved_;
  for (;;) {
    int completed = 0;
    bool busy = false;
    for (auto& peer : channels_) {
      for (auto& c : peer) {
        if (c.fd < 0 || (!wantsSend(c) && !wantsRecv(c))) continue;
        busy = true;
        completed += drive(c);
      }
    }
    if (!busy) return completed;
    if (completed > 0) {
      spin_.succeeded();
      if (yieldPoll) spin_.yieldSucceeded();
      return completed;
    }
    if (abortSignal_.raised() || noticed_.load(std::memory_order_acquire)) return 0;
    const Clock::time_point now = Clock::now();
    if (bytesMoved_ != moved) {
      moved = bytesMoved_;
      const double spunNs = static_cast<double>(std::chrono::nanoseconds(now - start).count());
      if (static_cast<double>(moved - movedAtStart) >= spunNs * kStreamingBytesPerNs) {
        idleUntil = now + budget;
      } else if (yieldPoll) {
        // A trickle: the peer is running and sending, so there is no queued rank to yield to, and poll() wakes us
        // when more arrives.
        break;
      }
    }
    if (now >= idleUntil || now >= end) {
      if (yieldPoll) spin_.yieldFailed();  // the wait goes on asleep, past the yield poll
      break;
    }
    if (yieldPoll) sched_yield();
  }
  spin_.failed();
  return 0;
}

bool TcpTransport::waitsOnSameHostPeer() const {
  for (size_t p = 0; p < channels_.size(); ++p) {
    if (!sameHost_[p]) continue;
    for (const auto& c : channels_[p]) {
      if (c.fd >= 0 && (wantsSend(c) || wantsRecv(c))) return true;
    }
  }
  return false;
}

bool TcpTransport::hasPending() const {
  for (const auto& peer : channels_) {
    for (const auto& c : peer) {
      if (wantsSend(c) || wantsRecv(c)) return true;
    }
  }
  return false;
}

bool TcpTransport::peerClosed(int peer) {
  if (abortSignal_.raised()) return true;
  if (hasControl()) {
    std::unique_lock<std::mutex> lock(controlMutex_, std::try_to_lock);
    if (lock.owns_lock()) {
      const Clock::time_point now = Clock::now();
      if (now >= nextControlService_) {
        nextControlService_ = now + kControlServiceInterval;
        serveControl();
      }
      if (control_[peer].announced || control_[peer].closed) return true;
    }
  }
  return dataChannelsClosed(peer);
}

bool TcpTransport::dataChannelsClosed(int peer) {
  for (auto& c : channels_[peer]) {
    if (c.fd < 0 || wantsRecv(c)) continue;  // a pending receive would notice by itself
    char byte;
    ssize_t n = ::recv(c.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
  }
  return false;
}

void TcpTransport::abort(const std::string& reason) {
  if (!abortSignal_.raise(reason)) return;
  // Shut the sockets down (not close: another thread may be inside poll on them) so that peers see EOF at once
  // and fail too, instead of waiting for their timeout.
  for (auto& peer : channels_) {
    for (auto& c : peer) {
      if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
    }
  }
  for (auto& c : control_) {
    if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
  }
}

void TcpTransport::serveControl() {
  for (int p = 0; p < static_cast<int>(control_.size()); ++p) {
    Control& c = control_[p];
    if (p == rank_ || c.fd < 0 || c.closed) continue;
    for (;;) {
      ssize_t n = ::recv(c.fd, c.frame + c.have, sizeof(c.frame) - c.have, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      if (n <= 0) {  // the peer is gone (a normal exit closes it too: no error by itself)
        c.closed = true;
        break;
      }
      c.have += static_cast<size_t>(n);
      if (c.have < sizeof(c.frame)) continue;
      c.have = 0;
      takeNotice(p, c.frame);
      if (c.closed) break;
    }
  }
}

void TcpTransport::takeNotice(int peer, const void* frame) {
  tcp_wire::Notice n;
  std::memcpy(&n, frame, sizeof(n));
  std::string why;
  if (!tcp_wire::checkNotice(n, peer, nranks_, &why)) {
    TERN_LOG(kWarn, kNet, rank_, "control connection of rank %d (%s): %s; ignoring it from now on", peer,
             peerAddress_[peer].c_str(), why.c_str());
    control_[peer].closed = true;
    return;
  }
  switch (n.kind) {
    case tcp_wire::kNoticePing: {
      tcp_wire::Notice pong;
      pong.kind = tcp_wire::kNoticePong;
      pong.from = rank_;
      pong.sequence = n.sequence;
      sendNotice(peer, &pong);
      break;
    }
    case tcp_wire::kNoticePong:
      control_[peer].answered = n.sequence;
      break;
    case tcp_wire::kNoticeFailed:
      control_[peer].announced = true;
      if (!noticed_.load()) {
        noticeFrom_ = peer;
        noticeLost_ = n.lost;
        noticeDetector_ = n.detector;
        noticeText_ = n.text;
        noticed_.store(true, std::memory_order_release);
      }
      break;
    default:
      break;
  }
}

bool TcpTransport::sendNotice(int peer, const void* frame) {
  Control& c = control_[peer];
  const char* bytes = static_cast<const char*>(frame);
  size_t sent = 0;
  const auto until = Clock::now() + kNoticeSendWait;
  while (sent < sizeof(tcp_wire::Notice)) {
    ssize_t n = ::send(c.fd, bytes + sent, sizeof(tcp_wire::Notice) - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    pollfd pfd{c.fd, POLLOUT, 0};
    ::poll(&pfd, 1, static_cast<int>(left));
  }
  if (sent > 0 && sent < sizeof(tcp_wire::Notice)) c.closed = true;  // out of step: its frames cannot be trusted
  return sent == sizeof(tcp_wire::Notice);
}

void TcpTransport::throwNotice() {
  std::string what;
  {
    std::lock_guard<std::mutex> lock(controlMutex_);
    what = describeLoss(noticeLost_, noticeDetector_, noticeText_);
  }
  throwError(ternRemoteError, "rank %d: %s", rank_, what.c_str());
}

TcpTransport::LossVerdict TcpTransport::verdictFromNotice() const {
  LossVerdict v;
  v.lost = noticeLost_;
  v.detector = noticeDetector_;
  v.detail = noticeText_;
  v.fromPeer = true;
  return v;
}

template <typename Done>
bool TcpTransport::serveControlUntil(std::chrono::milliseconds wait, Done done) {
  const auto until = Clock::now() + wait;
  for (;;) {
    serveControl();
    if (done()) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    std::vector<pollfd> fds;
    for (const auto& c : control_) {
      if (c.fd >= 0 && !c.closed) fds.push_back({c.fd, POLLIN, 0});
    }
    if (fds.empty()) return done();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 10)));
  }
}

TcpTransport::LossVerdict TcpTransport::investigate(bool timedOut, int timeoutMs) {
  LossVerdict v;
  if (abortSignal_.raised()) return v;  // our own abort: nothing to learn from the connections it shut
  if (!hasControl()) {
    // Two ranks: whatever was lost is the other one, if its connection closed or it never answered.
    const int other = 1 - rank_;
    if (nranks_ == 2 && dataChannelsClosed(other)) {
      v.lost = other;
      v.detector = rank_;
      v.detail = format("rank %d's connections closed", other);
    } else if (nranks_ == 2 && timedOut) {
      v.lost = other;
      v.detector = rank_;
      v.detail = format("rank %d did not answer within TERN_TIMEOUT", other);
    }
    return v;
  }
  std::lock_guard<std::mutex> lock(controlMutex_);
  const auto step = std::chrono::milliseconds(std::clamp(timeoutMs / 4, 1, 1000));
  serveControl();
  if (noticed_) return verdictFromNotice();
  // Peers whose connections closed: a notice sent just before (on another connection) may still be on its way,
  // and it settles the question; a control connection closed without one says the peer died.
  std::vector<int> closed;
  auto findClosed = [&] {
    closed.clear();
    for (int p = 0; p < nranks_; ++p) {
      if (p != rank_ && (control_[p].closed || dataChannelsClosed(p))) closed.push_back(p);
    }
    return !closed.empty();
  };
  if (!findClosed() && !timedOut) {
    // An error that is not a timeout may have come from a dying peer before its connections closed (the kernel
    // tears a process's memory down before its files; a read of its memory fails first): let them settle.
    serveControlUntil(std::min(step, std::chrono::milliseconds(200)), [&] { return noticed_ || findClosed(); });
    if (noticed_) return verdictFromNotice();
  }
  if (!closed.empty()) {
    serveControlUntil(std::min(step, std::chrono::milliseconds(500)), [&] {
      if (noticed_) return true;
      for (int p : closed) {
        if (!control_[p].closed) return false;
      }
      return true;
    });
    if (noticed_) return verdictFromNotice();
    v.lost = closed.front();
    v.detector = rank_;
    v.detail = format("rank %d's connections closed without a failure notice (it exited or was killed)", v.lost);
    return v;
  }
  if (!timedOut) return v;
  // A timeout: ask everyone. A live rank answers from inside any tern wait; a stopped or cut-off one cannot.
  tcp_wire::Notice ping;
  ping.kind = tcp_wire::kNoticePing;
  ping.from = rank_;
  ping.sequence = ++pingSequence_;
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_ && !control_[p].closed) sendNotice(p, &ping);
  }
  auto silent = [&] {
    std::vector<int> s;
    for (int p = 0; p < nranks_; ++p) {
      if (p != rank_ && (control_[p].closed || control_[p].answered != ping.sequence)) s.push_back(p);
    }
    return s;
  };
  serveControlUntil(step, [&] { return noticed_ || silent().empty(); });
  if (noticed_) return verdictFromNotice();
  const std::vector<int> gone = silent();
  if (gone.empty()) return v;  // everyone is there: a plain timeout (ranks in different calls, or a deadlock)
  v.lost = gone.front();
  v.detector = rank_;
  std::string others;
  for (size_t i = 1; i < gone.size(); ++i) others += format(" %d", gone[i]);
  v.detail = format("it did not answer within %lld ms after a wait timed out%s%s", static_cast<long long>(step.count()),
                    others.empty() ? "" : "; not answering either:", others.c_str());
  return v;
}

void TcpTransport::announceFailure(int lost, int detector, const std::string& text) {
  if (!hasControl() || abortSignal_.raised()) return;
  std::lock_guard<std::mutex> lock(controlMutex_);
  tcp_wire::Notice n;
  n.kind = tcp_wire::kNoticeFailed;
  n.from = rank_;
  n.lost = lost;
  n.detector = detector < 0 ? rank_ : detector;
  std::snprintf(n.text, sizeof(n.text), "%s", text.c_str());
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_ && control_[p].fd >= 0 && !control_[p].closed && !control_[p].announced) sendNotice(p, &n);
  }
}

}  // namespace tern
