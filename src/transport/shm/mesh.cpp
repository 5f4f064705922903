#include "transport/shm/mesh.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <set>

#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/shm/buffer_registry.hpp"
#include "transport/shm/kernel_copy_probe.hpp"
#include "transport/shm/process_identity.hpp"
#include "transport/shm/segment_sweeper.hpp"
#include "transport/shm/shm_wire.hpp"
#include "transport/shm/tcp_exchange.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace tern::shm {

namespace {

using wire::Hello;
using wire::kCma;
using wire::kFd;
using wire::kMapped;
using wire::kSlowKernelCopies;

std::string segmentName(const Secret& secret, int rank) {
  static std::atomic<uint32_t> counter{0};
  // pid + a per-process counter keep names unique when one process creates several communicators (or ranks that
  // are threads) with the same secret.
  char buf[160];
  std::snprintf(buf, sizeof(buf), "/tern-%s-r%d-p%d-%u", Mesh::jobTag(secret).c_str(), rank,
                static_cast<int>(::getpid()), counter.fetch_add(1));
  return buf;
}

// The cache sharing probe (cache_sharing_probe.hpp) between the lowest local rank and each other in turn; every rank
// of the host calls it. Returns the lowest rank's answer (TERN_SHM_SHARED_CACHE there replaces its measurement),
// which it sends to the others.
CacheSharing probeCacheSharing(Mesh& m, const IntraNodeSetup& setup, Clock::time_point deadline) {
  const int rank = m.rank();
  const std::vector<int>& peers = m.localPeers();
  const int leader = std::min(rank, *std::min_element(peers.begin(), peers.end()));
  // Each pair takes well under a millisecond; the allowance covers a peer that reaches the probe late.
  const auto allowance = std::chrono::milliseconds(20) * static_cast<int>(peers.size() + 1);
  const Clock::time_point probeDeadline = std::min(deadline, Clock::now() + allowance);
  auto tagOf = [](int peer) { return static_cast<uint32_t>(peer + 1) << 16; };
  uint8_t answer = static_cast<uint8_t>(CacheSharing::kUnknown);
  if (rank == leader) {
    double slowest = 0;
    for (int p : peers) {
      const double ns = bounceWithPeer(m.ctrl(p).cacheProbe, m.ctrl(rank).cacheProbe, tagOf(p), probeDeadline);
      slowest = ns < 0 || slowest < 0 ? -1 : std::max(slowest, ns);
    }
    CacheSharing sharing = cacheSharingFromEnvironment();
    if (sharing == CacheSharing::kUnknown) sharing = cacheSharingOf(slowest);
    TERN_LOG(kInfo, kShm, rank, "cache-line round trip to the host's other ranks: %s%.0f ns (%s)",
             peers.size() > 1 ? "up to " : "", slowest,
             sharing == CacheSharing::kShared     ? "a shared cache"
             : sharing == CacheSharing::kSeparate ? "no shared cache"
                                                  : "unknown");
    answer = static_cast<uint8_t>(sharing);
  } else if (!echoToLeader(m.ctrl(rank).cacheProbe, m.ctrl(leader).cacheProbe, tagOf(rank), probeDeadline)) {
    TERN_LOG(kInfo, kShm, rank, "cache sharing probe: rank %d did not finish in time", leader);
  }
  const auto answers = exchangeWithPeers(setup.tcp, rank, peers, &answer, sizeof(answer), deadline, setup.abortFlag,
                                         "shared-memory setup");
  if (rank != leader) {
    const auto at = std::find(peers.begin(), peers.end(), leader) - peers.begin();
    const std::vector<char>& theirs = answers[static_cast<size_t>(at)];
    // Bytes from a peer: anything but the three answers is unknown.
    answer = theirs.size() == 1 && static_cast<uint8_t>(theirs[0]) <= 2 ? static_cast<uint8_t>(theirs[0]) : 0;
  }
  return static_cast<CacheSharing>(answer);
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
  const std::string tag = jobTag(setup.secret);
  // Names left by tern processes of this user that no longer exist (segment_sweeper.hpp).
  sweepDeadSegments("");

  PeerView& self = m->peers_[rank];
  bool ok = true;
  bool cmaEverywhere = false;          // Mesh::cmaBetweenAllRanks
  bool slowKernelCopies = false;       // Mesh::kernelCopiesSlow
  std::vector<std::string> peerNames;  // announced by peers, valid names of this job
  try {
    // 1. Create, describe, announce. A rank that cannot create its segment (no /dev/shm, out of space) still takes
    // part in the handshake, announcing no segment, so that every rank of the host learns it and falls back
    // together.
    try {
      self.segment = Segment::create(segmentName(setup.secret, rank), layout.totalBytes, layout.populateBytes, rank);
    } catch (const Error& e) {
      TERN_LOG(kWarn, kShm, rank, "cannot create a shared-memory segment: %s", e.what());
      ok = false;
    }
    self.local = true;
    self.pid = ::getpid();
    self.token = me.token;
    self.sameProcess = true;
    Hello hello{};
    hello.magic = wire::kHelloMagic;
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
    setupKillPoint(rank, "announced");

    // 2. Map every peer's segment and probe what works; report.
    const std::string jobPrefix = "/tern-" + tag + "-";
    std::vector<uint8_t> outcome(n, 0);
    for (size_t i = 0; i < m->localPeers_.size(); ++i) {
      int p = m->localPeers_[i];
      PeerView& v = m->peers_[p];
      // A malformed announcement fails the setup (it is not a peer without shared memory, it is a broken one).
      const Hello h = wire::decodeHello(hellos[i].data(), hellos[i].size(), p, layout);
      try {
        if (h.bytes == 0) throwError(ternSystemError, "rank %d has no segment", p);
        const std::string name = h.name;
        if (name.compare(0, jobPrefix.size(), jobPrefix) != 0 || segmentCreator(name) != static_cast<pid_t>(h.pid)) {
          throwError(ternRemoteError, "rank %d announced a segment that is not its own for this job (%s)", p,
                     name.c_str());
        }
        peerNames.push_back(name);
        v.segment = Segment::open(name, h.bytes, layout.populateBytes);
        v.header = reinterpret_cast<SegmentHeader*>(v.segment.data());
        wire::checkSegmentHeader(*v.header, h, p, layout);
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
    // The probe costs a fraction of a millisecond, once per process, and only where a peer process is read by CMA.
    bool readsPeerProcess = false;
    for (int p : m->localPeers_)
      readsPeerProcess = readsPeerProcess || (!m->peers_[p].sameProcess && (outcome[p] & kCma));
    if (readsPeerProcess && shm::kernelCopiesSlow()) outcome[rank] |= kSlowKernelCopies;
    slowKernelCopies = (outcome[rank] & kSlowKernelCopies) != 0;
    setupKillPoint(rank, "mapped");
    auto outcomes = exchangeWithPeers(setup.tcp, rank, m->localPeers_, outcome.data(), outcome.size(), deadline,
                                      setup.abortFlag, "shared-memory setup");
    setupKillPoint(rank, "reported");

    // 3. Everyone has mapped every segment (or given up): the names have done their job. Every rank unlinks all of
    // them (whoever comes first), so that one killed right here leaves nothing behind.
    self.segment.unlink();
    for (const std::string& name : peerNames) ::shm_unlink(name.c_str());
    // CMA between every pair of distinct processes: this rank's outcomes and every peer's say so for every pair,
    // and no two ranks share a process (their tokens, which every rank has seen, differ).
    cmaEverywhere = true;
    std::set<uint64_t> tokens{me.token};
    for (int p : m->localPeers_) {
      tokens.insert(m->peers_[p].token);
      cmaEverywhere = cmaEverywhere && (outcome[p] & kCma) != 0;
    }
    cmaEverywhere = cmaEverywhere && tokens.size() == m->localPeers_.size() + 1;
    for (size_t i = 0; i < m->localPeers_.size(); ++i) {
      int p = m->localPeers_[i];
      const std::vector<uint8_t> theirs = wire::decodeOutcomes(outcomes[i].data(), outcomes[i].size(), n, p);
      if (!(theirs[p] & kMapped)) ok = false;
      slowKernelCopies = slowKernelCopies || (theirs[p] & kSlowKernelCopies) != 0;
      cmaEverywhere = cmaEverywhere && (theirs[rank] & kCma) != 0;
      for (int q : m->localPeers_) cmaEverywhere = cmaEverywhere && (q == p || (theirs[q] & kCma) != 0);
      PeerView& v = m->peers_[p];
      v.cmaFrom = (outcome[p] & kCma) != 0;
      v.cmaTo = (theirs[rank] & kCma) != 0;
      v.fdFrom = v.sameProcess || (outcome[p] & kFd) != 0;
      v.fdTo = v.sameProcess || (theirs[rank] & kFd) != 0;
    }
    // 4. Where the CMA learner's prior depends on it (cma_learner.hpp): whether the ranks share a cache. Every rank
    // of the host takes this branch alike (its terms come from every rank's reports).
    if (ok && slowKernelCopies && cmaEverywhere && setup.machineRanksOwnCpus) {
      m->cacheSharing_ = probeCacheSharing(*m, setup, deadline);
    }
  } catch (...) {
    // A peer died or misbehaved during setup: remove this rank's name, the names peers announced, and whatever else
    // of this job a dead peer left (it may have died before announcing).
    self.segment.unlink();
    for (const std::string& name : peerNames) {
      if (processGone(segmentCreator(name))) ::shm_unlink(name.c_str());
    }
    sweepJobAfterFailure(tag, std::chrono::milliseconds(2000));
    throw;
  }
  if (!ok) {
    TERN_LOG(kWarn, kShm, rank, "shared-memory transport disabled on this host: a rank could not map a segment");
    return nullptr;
  }
  m->cmaBetweenAllRanks_ = cmaEverywhere;
  m->kernelCopiesSlow_ = slowKernelCopies;
  m->ranksOwnCpus_ = setup.machineRanksOwnCpus;
  m->peersMapMyBuffers_ = true;
  for (int p : m->localPeers_) m->peersMapMyBuffers_ &= m->peers_[p].fdTo;
  int cma = 0, sameProcess = 0;
  for (int p : m->localPeers_) {
    cma += m->peers_[p].cmaFrom && !m->peers_[p].sameProcess;
    sameProcess += m->peers_[p].sameProcess;
  }
  TERN_LOG(kInfo, kShm, rank,
           "shared memory with %zu same-host peers (%d in this process, CMA from %d, registered "
           "buffers %s; kernel copies at %.2fx memcpy here%s), segment %zu KiB",
           m->localPeers_.size(), sameProcess, cma, m->peersMapMyBuffers_ ? "zero-copy" : "staged",
           cma > 0 ? kernelCopyRatio() : 0.0,
           !slowKernelCopies   ? ""
           : !m->ranksOwnCpus_ ? ", slow on this host: CMA starts avoided"
           : m->cacheSharing_ == CacheSharing::kShared
               ? ", slow on this host, ranks share a cache: CMA starts on mid-size calls only"
               : ", slow on this host: CMA starts avoided below 64 KiB per rank",
           layout.totalBytes / 1024);
  return m;
}

}  // namespace tern::shm
