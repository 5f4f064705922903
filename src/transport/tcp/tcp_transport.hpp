// TCP transport: a full mesh of non-blocking sockets, several per peer (TERN_NSOCKS).
//
// Why several sockets: one TCP stream is bound by one core's copy rate in the kernel and by its congestion
// window; striping a large message across sockets lets the kernel work on them in parallel and keeps the pipe
// full while one socket's buffer drains. Small messages go whole on one socket (chosen by sequence number, so
// both sides agree without negotiation). A large message is cut into chunks that the sockets take one at a time,
// whenever their kernel buffers take more, so a socket that runs faster carries more of it: streams that share one
// bottleneck rarely share it evenly, and a fixed split would leave the slower one finishing the message alone. The
// receiver learns where each chunk goes from its header.
// Every message part carries a small header (sequence, part index, sizes) so that a mismatch between ranks' calls
// is reported as an error instead of corrupting data.
//
// Failure path: a job of three or more ranks also keeps one control connection per peer, which carries only small
// fixed-size notices and so is never stuck behind data. A rank that fails tells every peer which rank was lost and
// who noticed (announceFailure), and a rank that times out asks every peer whether it is still there (a ping each
// live rank answers from inside any tern wait) before it names the rank that went silent (investigate). So a rank
// that only sees the cascade (a neighbour's closed connection, a neighbour's abort flag) still names the rank that
// was lost, not the neighbour that gave up because of it. Two ranks need none of this: the lost rank can only be
// the other one.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "transport/abort_signal.hpp"
#include "transport/bootstrap.hpp"
#include "transport/spin_policy.hpp"
#include "transport/transport.hpp"

namespace tern {

class TcpTransport : public Transport {
 public:
  // Connects this rank to every peer: lower ranks connect, higher ranks accept, all connections at once in one
  // poll loop. Each connection is mutually authenticated over the job secret and bound to the bootstrap's job id
  // and to the two ranks and the socket index (base/auth.hpp); a peer that cannot prove itself is refused with
  // ternRemoteError naming its address, a stranger connecting to our listener is dropped and logged without ever
  // delaying the real peers.
  static std::unique_ptr<TcpTransport> connect(int rank, int nranks, BootstrapResult& boot, const Secret& secret,
                                               int socketsPerPeer, Clock::time_point deadline,
                                               const std::atomic<bool>* abortFlag);
  ~TcpTransport() override;

  const char* name() const override { return "tcp"; }
  int progress(int waitMs) override;
  void abort(const std::string& reason) override;
  bool sameHost(int peer) const override { return sameHost_[peer]; }
  bool hasPending() const override;
  // True if the peer's connections show end-of-file or an error without blocking, or the peer announced that it
  // failed: the liveness check that other transports (shared memory) use for peers they otherwise only meet through
  // memory. It also serves the control connections (answers pings, takes notices), so a rank blocked in another
  // transport's wait still answers.
  bool peerClosed(int peer);

  // What this rank can tell about a failure of the job it is about to report.
  struct LossVerdict {
    int lost = -1;          // the rank that was lost; -1 when none is known (a failure of this rank's own)
    int detector = -1;      // the rank that noticed the loss first
    std::string detail;     // how: the detector's own error, or what was seen here
    bool fromPeer = false;  // learned from a peer's notice (detail is that peer's account)
  };
  // Called once on the failure path, before abort(): a peer's failure notice if one came (or comes within a short
  // grace while closed connections of peers settle); else the peers whose connections closed without a notice (they
  // died); else, when the failure was a timeout, the peers that do not answer a ping within a bounded wait
  // (stopped, or cut off). Bounded by min(1 s, timeoutMs / 4) per step.
  LossVerdict investigate(bool timedOut, int timeoutMs);
  // Tells every peer that this rank fails: lost (-1 for none) and detector as investigate() found them, text the
  // error. Best effort, bounded (a peer that stopped reading does not block it).
  void announceFailure(int lost, int detector, const std::string& text);

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

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* transfer) override;
  void startRecv(int peer, const MemRef& dst, Transfer* transfer) override;

 private:
  struct Part {
    Transfer* owner;
    char* data;
    size_t bytes;
    size_t done = 0;
    Header header{};    // sends: what goes on the wire; receives: what we expect
    Header received{};  // receives: what arrived
    size_t headerDone = 0;
    bool chunk = false;  // sends: a chunk of a striped message (any of the peer's sockets may carry it)
    int socket = -1;     // sends: a whole message's socket
  };
  // A striped message being received: its chunks arrive on any of the peer's sockets, in any order.
  struct StripedRecv {
    uint64_t sequence;
    Transfer* owner;
    char* data;
    size_t bytes;
    size_t chunk = 0;    // chunk i starts at i * chunk; 0 until the first chunk arrives
    uint32_t parts = 0;  // as the sender cut it: known from the first chunk's header
    uint32_t received = 0;
    std::vector<bool> arrived;
    bool complete() const { return parts != 0 && received == parts; }
  };
  struct Channel {
    int fd = -1;
    int peer = -1;
    int index = 0;  // among the peer's sockets
    std::deque<Part> sends;
    std::deque<Part> recvs;  // whole messages expected on this socket, in order
    // A header read before its destination was known (a socket that also carries chunks of striped messages),
    // kept until it is matched; held while the receive it names is not posted yet.
    Header pending{};
    size_t pendingDone = 0;
    // The chunk of a striped message whose payload is being read.
    StripedRecv* chunkOf = nullptr;
    size_t chunkOffset = 0;
    size_t chunkBytes = 0;
    size_t chunkDone = 0;
    // The peer closed this socket between messages while only chunks of striped messages were expected from it: a
    // peer that finished sends its last chunks on whichever sockets drained first, so the rest may still be on its
    // other sockets. Nothing more is read from it; a receive that needs it fails.
    bool ended = false;
  };

  TcpTransport(int rank, int nranks, int socketsPerPeer);
  void post(int peer, char* data, size_t bytes, Transfer* transfer, bool isSend);
  void queueSend(int peer, int socket, Part part);
  int progressOnce(int waitMs);
  int spinForCompletion(int waitMs);
  // Whether a socket to a peer of this rank's host has a send or receive pending (the yield poll's condition).
  bool waitsOnSameHostPeer() const;
  int drive(Channel& c);
  int driveSends(Channel& c);
  int driveRecvs(Channel& c);
  // Reads the payload of the channel's current whole message or chunk; returns false when the socket ran dry.
  bool readPayload(Channel& c, char* data, size_t bytes, size_t& done);
  // Reads the next chunk header into c.pending on a socket that expects no whole message; false when the socket ran
  // dry or ended (Channel::ended) while another of the peer's sockets is still open.
  bool readChunkHeader(Channel& c);
  // Matches the complete header in c.pending to a posted receive; false when that receive is not posted yet.
  bool dispatchHeader(Channel& c);
  // Whether a large message to peer goes in chunks over all its sockets (the link is fast) or whole on one.
  bool stripesTo(int peer);
  bool wantsSend(const Channel& c) const;
  bool wantsRecv(const Channel& c) const;
  void throwIfAborted();
  void throwIfFailed();
  void checkHeader(const Channel& c, const Part& p) const;
  void checkChunk(const Channel& c, const StripedRecv& s, const Header& h) const;
  [[noreturn]] void connectionLost(const Channel& c, const char* during, int err);

  // The control connections (see the top of this file); everything below runs under controlMutex_.
  struct Control {
    int fd = -1;
    unsigned char frame[256];  // a notice being received (sizeof(tcp_wire::Notice))
    size_t have = 0;
    bool closed = false;     // end-of-file, an error, or malformed input: no more notices from it
    uint32_t answered = 0;   // the last ping sequence it answered
    bool announced = false;  // it sent a failure notice
  };
  bool hasControl() const { return !control_.empty(); }
  bool dataChannelsClosed(int peer);
  void serveControl();
  void takeNotice(int peer, const void* frame);
  bool sendNotice(int peer, const void* frame);
  [[noreturn]] void throwNotice();
  LossVerdict verdictFromNotice() const;
  // Serves the control connections until done() or the wait is over; true if done() held.
  template <typename Done>
  bool serveControlUntil(std::chrono::milliseconds wait, Done done);

  int rank_;
  int nranks_;
  int socketsPerPeer_;
  std::vector<std::vector<Channel>> channels_;  // [peer][socket]
  // [peer]: sends no socket has taken yet, in sequence order: chunks of striped messages (any socket takes them) and
  // whole messages queued behind them for their own socket (queueSend).
  std::vector<std::deque<Part>> unassignedSends_;
  std::vector<std::deque<StripedRecv>> stripedRecvs_;  // [peer], by sequence; completed ones leave from the front
  std::vector<bool> stripes_;                          // [peer]: stripesTo()'s last verdict
  std::vector<Clock::time_point> rateCheckedAt_;       // [peer]: when stripesTo() last asked the kernel
  std::vector<uint64_t> sendSequence_;
  std::vector<uint64_t> recvSequence_;
  std::vector<std::string> peerAddress_;
  std::vector<bool> sameHost_;
  // How long progress() busy-polls the sockets before it sleeps in poll() (spinForCompletion).
  SpinBudget spin_{SpinPolicy{}};
  uint64_t bytesMoved_ = 0;  // every byte sent or received, so that a spin can tell a stream from a silence
  AbortSignal abortSignal_;
  // The first error progress() threw (a size mismatch, a lost connection): every later call throws it again, since
  // the streams it came from are out of step or gone.
  std::unique_ptr<Error> failure_;

  std::vector<Control> control_;  // [peer]; empty with fewer than three ranks
  std::mutex controlMutex_;
  uint32_t pingSequence_ = 0;
  // The first failure notice any peer sent: (lost, detector, text). Atomic flag: read on the call path unlocked.
  std::atomic<bool> noticed_{false};
  int noticeFrom_ = -1;
  int noticeLost_ = -1;
  int noticeDetector_ = -1;
  std::string noticeText_;
  Clock::time_point nextControlService_{};
};

// The peer handshake on the wire (host byte order). Public for tests (fake peers) and fuzzers.
namespace tcp_wire {

inline constexpr uint32_t kHelloMagic = 0x4f4c4548;   // "HELO"
inline constexpr uint32_t kAcceptMagic = 0x4b4f4c48;  // "HLOK"
inline constexpr uint32_t kVersion = 3;               // 3: striped messages travel in chunks any socket may carry

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

// A control-connection notice: fixed size, so a receiver always knows where the next one starts.
inline constexpr uint32_t kNoticeMagic = 0x45544f4e;  // "NOTE"
enum NoticeKind : uint32_t { kNoticePing = 1, kNoticePong = 2, kNoticeFailed = 3 };

struct Notice {
  uint32_t magic = kNoticeMagic;
  uint32_t kind = 0;
  int32_t from = -1;
  int32_t lost = -1;      // kNoticeFailed: the rank lost, -1 when the sender failed on its own
  int32_t detector = -1;  // kNoticeFailed: the rank that noticed the loss
  uint32_t sequence = 0;  // ping and pong
  char text[232] = {};    // kNoticeFailed: the detector's error, terminated
};
static_assert(sizeof(Notice) == 256);

// Checks a notice peer `from` of an nranks job sent, and terminates its text. False, with why, when it is malformed
// (then the receiver stops reading that connection).
bool checkNotice(Notice& notice, int from, int nranks, std::string* why);

// Striping: a message of at least kStripeThreshold bytes to a peer reached over several sockets may travel in
// chunks (chunk i at offset i * chunk) that the sockets take one at a time, so a faster stream carries more of it.
// The sender chooses how many: about kChunksPerSocket per socket, each between kMinStripeChunk and
// kMaxStripeChunk (every chunk costs each end a few system calls, and a message in few chunks cannot be shared out
// evenly), or one where a single stream fills the link. The receiver learns the count from the first header.
inline constexpr size_t kStripeThreshold = 256 * 1024;
inline constexpr size_t kMinStripeChunk = 256 * 1024;
inline constexpr size_t kMaxStripeChunk = 1024 * 1024;
inline constexpr size_t kChunksPerSocket = 4;
// How many chunks a bytes-long message over `sockets` sockets travels in when striped; 0 when it is never striped
// (then it goes whole on socket sequence % sockets).
size_t stripedChunkCount(size_t bytes, int sockets);
// The chunk size of a bytes-long message cut into `parts` chunks (whole pages, the last one shorter); 0 when no
// such cut exists (a header that claims one is refused).
size_t chunkBytes(size_t bytes, uint32_t parts);

Mac acceptorProof(const Secret& secret, const JobId& jobId, const Hello& hello, const Nonce& acceptorNonce);
Mac initiatorProof(const Secret& secret, const JobId& jobId, const Hello& hello, const Nonce& acceptorNonce);

}  // namespace tcp_wire

}  // namespace tern
