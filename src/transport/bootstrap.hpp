// Bootstrap: how ranks that know only a unique id find each other.
//
// The root (the process that called ternGetUniqueId, or rank 0 of an environment launch) runs a short-lived server
// thread. Every rank opens its own peer listener and connects to the root; root and rank authenticate each other
// by challenge-response over the job secret (base/auth.hpp; the root proves itself first, so a rank tells nothing
// to a fake root); the rank then sends its rank, the world size, its listener address and its host id. When all
// ranks have joined, the root sends everyone the table, authenticated, with a fresh random job id that the peer
// connections are bound to, and exits. The root serves all connections at once in a poll loop: a stranger that
// connects and stays silent or sends garbage holds a slot for a few seconds at most and never delays the ranks.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/auth.hpp"
#include "base/socket.hpp"
#include "base/unique_id.hpp"
#include "transport/spin_policy.hpp"

namespace tern {

struct PeerInfo {
  SocketAddress address;  // the peer's listener
  std::string hostId;
  std::string machineId;  // machineId() (base/host_id.hpp): the kernel the peer runs on, whatever its host id says
  CpuMask cpus{};         // the CPUs the peer may run on (ownCpuMask)
};

using JobId = std::array<uint8_t, 16>;

struct BootstrapResult {
  std::vector<PeerInfo> peers;  // indexed by rank
  Fd listener;                  // this rank's listener, for peers to connect to
  JobId jobId{};                // drawn by the root for this bootstrap; peer handshakes are bound to it
};

// The root server's thread, owned: destroying (or reassigning) the handle stops the server and joins its thread, so
// the server and everything it holds never outlive whoever started it.
class BootstrapRoot {
 public:
  BootstrapRoot() = default;
  // Starts the root server on an already-listening socket. expectedRanks may be 0 (taken from the first join).
  static BootstrapRoot start(Fd listener, const Secret& secret, int expectedRanks, int timeoutSec);
  BootstrapRoot(BootstrapRoot&& other) noexcept = default;
  BootstrapRoot& operator=(BootstrapRoot&& other) noexcept;
  ~BootstrapRoot() { stop(); }

  // Asks the server to give up (it hangs up on every connection, joined or not) and waits for its thread. A server
  // that already finished is only joined.
  void stop();
  // Waits for the server to finish by itself: every rank has its table, or it gave up (TERN_TIMEOUT).
  void wait();
  // True once the server is done (its thread is ending or ended); also true for an empty handle.
  bool finished() const;

 private:
  struct Shared {
    std::atomic<bool> stop{false};
    std::atomic<bool> done{false};
  };
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
  int ownerPid_ = 0;  // a forked child holds a copy of the handle but not the thread
};

// For callers that hand out only an id and so cannot keep the handle (ternGetUniqueId, rank 0 of an environment
// launch): the library keeps the server until it is done, joins finished ones as new ones start, and stops and
// joins any still running when the process exits.
void startBootstrapRoot(Fd listener, const Secret& secret, int expectedRanks, int timeoutSec);

// The next startBootstrapRoot on this thread deletes path once its server is done (the per-user file that handed
// a single-host job its secret: every rank has read it once they have all joined).
void removeFileWhenNextRootIsDone(const std::string& path);

// Creates a TCP unique id whose root is this process (listening on the interface TERN_SOCKET_IFNAME picks).
UniqueIdData createTcpUniqueId();

// Joins the job: returns every rank's listener address, host id, machine id and CPU mask. A root that cannot prove it
// knows the secret is refused with ternRemoteError naming its address.
BootstrapResult joinBootstrap(const UniqueIdData& id, int rank, int nranks, const std::string& hostId,
                              Clock::time_point deadline, const std::atomic<bool>* abortFlag);

// Whether the ranks that run on rank's machine (the same machine id, whatever their host ids: network namespaces
// that act as separate nodes, containers of one machine) each have a CPU of their own (ranksOwnCpus over their
// masks). Alike on every rank of that machine. Their waits busy-poll only where they do.
bool machineRanksOwnCpus(const BootstrapResult& boot, int rank);

// The bootstrap protocol on the wire (host byte order: the ranks of a job share one architecture). Public so that
// tests can play a fake root or a fake rank and fuzzers can feed the decoders.
namespace bootstrap_wire {

inline constexpr uint32_t kMagic = 0x4a4e5254;  // "TRNJ"
inline constexpr uint32_t kVersion = 3;
// Larger worlds are refused before anything is allocated for them.
inline constexpr int kMaxRanks = 1 << 20;
inline constexpr size_t kHostIdBytes = 128;
inline constexpr size_t kMessageBytes = 200;

struct Address {
  uint32_t length = 0;
  uint8_t bytes[sizeof(sockaddr_in6)] = {};
  void set(const SocketAddress& a);
  // False unless the length and family make an IPv4 or IPv6 address.
  bool get(SocketAddress* out) const;
};

struct Hello {  // rank -> root
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  Nonce nonce{};
};

struct Challenge {  // root -> rank: the root proves itself first
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  Nonce nonce{};
  Mac proof{};
};

struct Join {  // rank -> root, after the root's proof checked out
  uint32_t magic = kMagic;
  int32_t rank = -1;
  int32_t nranks = 0;
  Address listener;
  char hostId[kHostIdBytes] = {};
  char machineId[kHostIdBytes] = {};
  CpuMask cpus{};
  Mac proof{};
};

struct Status {  // root -> rank: joined (wait for the table), or refused and why
  uint32_t magic = kMagic;
  int32_t status = ternSuccess;
  int32_t nranks = 0;
  char message[kMessageBytes] = {};
  Mac proof{};
};

struct TableHeader {  // root -> rank once all have joined; then nranks PeerEntry, then a Mac
  uint32_t magic = kMagic;
  int32_t nranks = 0;
  JobId jobId{};
};

struct PeerEntry {
  Address listener;
  char hostId[kHostIdBytes] = {};
  char machineId[kHostIdBytes] = {};
  CpuMask cpus{};
};

Mac rootProof(const Secret& secret, const Nonce& rankNonce, const Nonce& rootNonce);
Mac joinProof(const Secret& secret, const Nonce& rankNonce, const Nonce& rootNonce, const Join& join);
Mac statusProof(const Secret& secret, const Nonce& rankNonce, const Nonce& rootNonce, const Status& status);
Mac tableProof(const Secret& secret, const Nonce& rankNonce, const Nonce& rootNonce, const TableHeader& header,
               const PeerEntry* entries, size_t count);

}  // namespace bootstrap_wire

}  // namespace tern
