// TCP transport: a full mesh of non-blocking sockets, several per peer (TERN_NSOCKS).
//
// Why several sockets: one TCP stream is bound by one core's copy rate in the kernel and by its congestion
// window; striping a large message across sockets lets the kernel work on them in parallel and keeps the pipe
// full while one socket's buffer drains. Small messages go whole on one socket (chosen by sequence number, so
// both sides agree without negotiation). Every message part carries a small header (sequence, part index, sizes)
// so that a mismatch between ranks' calls is reported as an error instead of corrupting data.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/bootstrap.hpp"
#include "transport/abort_signal.hpp"
#include "transport/transport.hpp"

namespace tern {

class TcpTransport : public Transport {
 public:
  // Connects this rank to every peer: lower ranks connect, higher ranks accept, all connections at once in one
  // poll loop. Each connection is mutually authenticated over the job secret and bound to the bootstrap's job id
  // and to the two ranks and the socket index (core/auth.hpp); a peer that cannot prove itself is refused with
  // ternRemoteError naming its address, a stranger connecting to our listener is dropped and logged without ever
  // delaying the real peers.
  static std::unique_ptr<TcpTransport> connect(int rank, int nranks, BootstrapResult& boot, const Secret& secret,
                                               int socketsPerPeer, Clock::time_point deadline,
                                               const std::atomic<bool>* abortFlag);
  ~TcpTransport() override;

  const char* name() const override { return "tcp"; }
  void postSend(int peer, const void* data, size_t bytes, Transfer* transfer) override;
  void postRecv(int peer, void* data, size_t bytes, Transfer* transfer) override;
  int progress(int waitMs) override;
  void abort(const std::string& reason) override;
  bool sameHost(int peer) const override { return sameHost_[peer]; }
  bool hasPending() const override;
  // True if the peer's connections show end-of-file or an error without blocking: the liveness check that
  // other transports (shared memory) use for peers they otherwise only meet through memory.
  bool peerClosed(int peer);

  // What the connection handshake works with (tcp_transport.cpp).
  struct Setup {
    int rank;
    int nranks;
    int socketsPerPeer;
    const std::vector<PeerInfo>& peers;
    int listener;
    const Secret& secret;
    const JobId& jobId;
    Clock::time_point deadline;
    const std::atomic<bool>* abortFlag;
    std::vector<std::vector<int>>& channels;  // [peer][socket] -> fd, -1 until connected
  };

  struct Header {
    uint64_t sequence;
    uint32_t part;
    uint32_t parts;
    uint64_t totalBytes;
    uint64_t partBytes;
  };

 private:
  struct Part {
    Transfer* owner;
    char* data;
    size_t bytes;
    size_t done = 0;
    Header header{};    // sends: what goes on the wire; receives: what we expect
    Header received{};  // receives: what arrived
    size_t headerDone = 0;
  };
  struct Channel {
    int fd = -1;
    int peer = -1;
    std::deque<Part> sends;
    std::deque<Part> recvs;
  };

  TcpTransport(int rank, int nranks, int socketsPerPeer);
  void post(int peer, char* data, size_t bytes, Transfer* transfer, bool isSend);
  int drive(Channel& c);
  int driveSends(Channel& c);
  int driveRecvs(Channel& c);
  void throwIfAborted();
  void checkHeader(const Channel& c, const Part& p) const;
  [[noreturn]] void connectionLost(const Channel& c, const char* during, int err);

  int rank_;
  int nranks_;
  int socketsPerPeer_;
  std::vector<std::vector<Channel>> channels_;  // [peer][socket]
  std::vector<uint64_t> sendSequence_;
  std::vector<uint64_t> recvSequence_;
  std::vector<std::string> peerAddress_;
  std::vector<bool> sameHost_;
  AbortSignal abortSignal_;
};

// The peer handshake on the wire (host byte order). Public for tests (fake peers) and fuzzers.
namespace tcp_wire {

inline constexpr uint32_t kHelloMagic = 0x4f4c4548;   // "HELO"
inline constexpr uint32_t kAcceptMagic = 0x4b4f4c48;  // "HLOK"
inline constexpr uint32_t kVersion = 2;

struct Hello {  // initiator (lower rank) -> acceptor
  uint32_t magic = kHelloMagic;
  uint32_t version = kVersion;
  int32_t fromRank = -1;
  int32_t toRank = -1;
  int32_t socketIndex = -1;
  uint32_t reserved = 0;
  Nonce nonce{};
};

struct Challenge {  // acceptor -> initiator: the acceptor proves itself first
  uint32_t magic = kHelloMagic;
  uint32_t version = kVersion;
  Nonce nonce{};
  Mac proof{};
};

struct Proof {  // initiator -> acceptor
  uint32_t magic = kHelloMagic;
  uint32_t reserved = 0;
  Mac proof{};
};

struct Accept {  // acceptor -> initiator: the connection is in place
  uint32_t magic = kAcceptMagic;
};

Mac acceptorProof(const Secret& secret, const JobId& jobId, const Hello& hello, const Nonce& acceptorNonce);
Mac initiatorProof(const Secret& secret, const JobId& jobId, const Hello& hello, const Nonce& acceptorNonce);

}  // namespace tcp_wire

}  // namespace tern
