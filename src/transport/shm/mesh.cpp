#include "transport/shm/mesh.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "transport/shm/buffer_registry.hpp"
#include "transport/shm/process_identity.hpp"
#include "transport/shm/tcp_exchange.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern::shm {

namespace {

constexpr uint64_t kHelloMagic = 0x6f6c6c65682d6873ull;  // "sh-hello"

// Round 1: where to find the sender's segment.
struct Hello {
  uint64_t magic;
  uint64_t bytes;
  uint64_t token;
  uint32_t pid;
  uint32_t rank;
  char name[200];
};

// Round 2, one byte per rank of the communicator: what the sender managed with that rank's segment.
enum OutcomeBits : uint8_t {
  kMapped = 1,  // mapped and validated (for the sender's own entry: everything it needed succeeded)
  kCma = 2,     // can process_vm_readv from that rank
  kFd = 4,      // can open that rank's memfds
};

std::string segmentName(const Secret& secret, int rank) {
  static std::atomic<uint32_t> counter{0};
  // pid + a per-process counter keep names unique when one process creates several communicators (or ranks that
  // are threads) with the same secret.
  char buf[160];
  std::snprintf(buf, sizeof(buf), "/tern-%s-r%d-p%d-%u", Mesh::jobTag(secret).c_str(), rank,
                static_cast<int>(::getpid()), counter.fetch_add(1));
  return buf;
}

// Checks that a mapped peer segment announces what its owner told us over TCP and the layout we expect.
void validateHeader(const SegmentHeader& h, const Hello& hello, int peer, const Layout& layout) {
  if (h.magic != kSegmentMagic || h.version != kLayoutVersion || h.nranks != static_cast<uint32_t>(layout.nranks) ||
      h.rank != static_cast<uint32_t>(peer) || h.pid != hello.pid || h.processToken != hello.token ||
      h.totalBytes != layout.totalBytes) {
    throwError(ternSystemError, "segment %s of rank %d does not match its announcement (different tern version?)",
               hello.name, peer);
  }
}

}  // namespace

std::string Mesh::jobTag(const Secret& secret) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : secret.bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::unique_ptr<Mesh> Mesh::create(const IntraNodeSetup& setup) {
  const int rank = setup.rank;
  const int n = setup.nranks;
  std::unique_ptr<Mesh> m(new Mesh);
  m->rank_ = rank;
  m->nranks_ = n;
  m->layout_ = Layout::forRanks(n);
  m->peers_.resize(n);
  for (int p = 0; p < n; ++p) {
    if (p != rank && setup.hostIds[p] == setup.hostIds[rank]) m->localPeers_.push_back(p);
  }
  if (m->localPeers_.empty() || setup.tcp == nullptr) return nullptr;
  auto deadline = Clock::now() + std::chrono::milliseconds(setup.timeoutMs);
  const Layout& layout = m->layout_;
  const ProcessIdentity& me = processIdentity();

  // 1. Create, describe, announce. A rank that cannot create its segment (no /dev/shm, out of space) still takes
  // part in the handshake, announcing no segment, so that every rank of the host learns it and falls back together.
  PeerView& self = m->peers_[rank];
  bool ok = true;
  try {
    self.segment = Segment::create(segmentName(setup.secret, rank), layout.totalBytes, layout.populateBytes);
  } catch (const Error& e) {
    TERN_LOG(kWarn, kShm, rank, "cannot create a shared-memory segment: %s", e.what());
    ok = false;
  }
  self.local = true;
  self.pid = ::getpid();
  self.token = me.token;
  self.sameProcess = true;
  Hello hello{};
  hello.magic = kHelloMagic;
  hello.token = me.token;
  hello.pid = static_cast<uint32_t>(self.pid);
  hello.rank = static_cast<uint32_t>(rank);
  if (ok) {
    self.header = reinterpret_cast<SegmentHeader*>(self.segment.data());
    self.ctrl = new (self.segment.data() + layout.controlOffset) RankControl();
    self.ctrl->cpu.store(-1);
    const FdProbe& probe = fdProbe();
    *self.header = SegmentHeader{kSegmentMagic,
                                 kLayoutVersion,
                                 static_cast<uint32_t>(n),
                                 static_cast<uint32_t>(rank),
                                 static_cast<uint32_t>(self.pid),
                                 me.token,
                                 layout.totalBytes,
                                 me.cmaCookie,
                                 reinterpret_cast<uint64_t>(me.cmaProbe),
                                 probe.fd,
                                 0,
                                 probe.ino};
    hello.bytes = layout.totalBytes;
    std::snprintf(hello.name, sizeof(hello.name), "%s", self.segment.name().c_str());
  }
  auto hellos = exchangeWithPeers(setup.tcp, rank, m->localPeers_, &hello, sizeof(hello), deadline, setup.abortFlag,
                                  "shared-memory setup");

  // 2. Map every peer's segment and probe what works; report.
  std::vector<uint8_t> outcome(n, 0);
  for (size_t i = 0; i < m->localPeers_.size(); ++i) {
    int p = m->localPeers_[i];
    Hello h;
    std::memcpy(&h, hellos[i].data(), sizeof(h));
    h.name[sizeof(h.name) - 1] = '\0';
    PeerView& v = m->peers_[p];
    try {
      if (h.magic != kHelloMagic || h.rank != static_cast<uint32_t>(p)) {
        throwError(ternSystemError, "rank %d sent a malformed announcement", p);
      }
      if (h.bytes == 0) throwError(ternSystemError, "rank %d has no segment", p);
      if (h.bytes != layout.totalBytes) {
        throwError(ternSystemError, "rank %d announced a segment of another layout (different tern version?)", p);
      }
      v.segment = Segment::open(h.name, h.bytes, layout.populateBytes);
      v.header = reinterpret_cast<SegmentHeader*>(v.segment.data());
      validateHeader(*v.header, h, p, layout);
      v.ctrl = reinterpret_cast<RankControl*>(v.segment.data() + layout.controlOffset);
      v.pid = static_cast<pid_t>(h.pid);
      v.token = h.token;
      v.sameProcess = h.token == me.token;
      v.local = true;
      outcome[p] |= kMapped;
      if (v.sameProcess || cmaProbe(v.pid, v.header->cmaProbeAddr, v.header->cmaCookie)) outcome[p] |= kCma;
      if (!v.sameProcess) {
        int fd = openPeerFd(v.pid, v.header->probeFd, v.header->probeIno);
        if (fd >= 0) {
          ::close(fd);
          outcome[p] |= kFd;
        }
      }
    } catch (const Error& e) {
      TERN_LOG(kWarn, kShm, rank, "shared memory with rank %d unavailable: %s", p, e.what());
      ok = false;
    }
  }
  if (ok) outcome[rank] |= kMapped;
  auto outcomes = exchangeWithPeers(setup.tcp, rank, m->localPeers_, outcome.data(), outcome.size(), deadline,
                                    setup.abortFlag, "shared-memory setup");

  // 3. Everyone has mapped our segment (or given up): the name has done its job.
  self.segment.unlink();
  for (size_t i = 0; i < m->localPeers_.size(); ++i) {
    int p = m->localPeers_[i];
    const std::vector<char>& theirs = outcomes[i];
    if (!(theirs[p] & kMapped)) ok = false;
    PeerView& v = m->peers_[p];
    v.cmaFrom = (outcome[p] & kCma) != 0;
    v.cmaTo = (theirs[rank] & kCma) != 0;
    v.fdFrom = v.sameProcess || (outcome[p] & kFd) != 0;
    v.fdTo = v.sameProcess || (theirs[rank] & kFd) != 0;
  }
  if (!ok) {
    TERN_LOG(kWarn, kShm, rank, "shared-memory transport disabled on this host: a rank could not map a segment");
    return nullptr;
  }
  m->peersMapMyBuffers_ = true;
  for (int p : m->localPeers_) m->peersMapMyBuffers_ &= m->peers_[p].fdTo;
  int cma = 0, sameProcess = 0;
  for (int p : m->localPeers_) {
    cma += m->peers_[p].cmaFrom && !m->peers_[p].sameProcess;
    sameProcess += m->peers_[p].sameProcess;
  }
  TERN_LOG(kInfo, kShm, rank,
           "shared memory with %zu same-host peers (%d in this process, CMA from %d, registered "
           "buffers %s), segment %zu KiB",
           m->localPeers_.size(), sameProcess, cma, m->peersMapMyBuffers_ ? "zero-copy" : "staged",
           layout.totalBytes / 1024);
  return m;
}

}  // namespace tern::shm
