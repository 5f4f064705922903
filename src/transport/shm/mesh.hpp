// The shared-memory mesh of one communicator on one host: this rank's segment, its same-host peers' segments mapped
// here, and what works between each pair (same process, cross-memory attach, mapping of registered buffers).
//
// Setup is a handshake over the communicator's TCP connections, between the ranks of this host only:
//   1. each rank creates its segment and sends its name and size to every same-host peer;
//   2. each rank maps every peer's segment (checking size, owner and header), probes CMA and memfd access, and
//      sends the outcome to every peer;
//   3. each rank unlinks its own segment's name: every peer has mapped it (or failed, and everyone knows).
// Every rank of the host sees every outcome, so all of them agree on whether the mesh is usable.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "base/unique_id.hpp"
#include "transport/shm/cache_sharing_probe.hpp"
#include "transport/shm/intra_node_setup.hpp"
#include "transport/shm/shm_layout.hpp"
#include "transport/shm/shm_segment.hpp"

namespace tern::shm {

struct PeerView {
  bool local = false;  // on this host, and its segment is mapped here
  Segment segment;     // self: the segment this rank created; peers: theirs, mapped here
  SegmentHeader* header = nullptr;
  RankControl* ctrl = nullptr;
  pid_t pid = 0;
  uint64_t token = 0;
  bool sameProcess = false;  // shares this rank's address space (ranks that are threads of one process)
  bool cmaFrom = false;      // this rank can process_vm_readv from the peer (or shares its process)
  bool cmaTo = false;        // the peer can process_vm_readv from this rank (or shares its process)
  bool fdFrom = false;       // this rank can open the peer's registered-buffer memfds
  bool fdTo = false;         // the peer can open this rank's registered-buffer memfds
};

class Mesh {
 public:
  // Runs the handshake. Returns nullptr when no other rank shares this host or when some rank of the host could
  // not map a segment (logged; the TCP path then serves those ranks). Throws tern::Error when the handshake itself
  // fails (timeout, abort, a peer that died).
  static std::unique_ptr<Mesh> create(const IntraNodeSetup& setup);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const Layout& layout() const { return layout_; }
  PeerView& peer(int p) { return peers_[p]; }
  const PeerView& peer(int p) const { return peers_[p]; }
  const std::vector<int>& localPeers() const { return localPeers_; }  // same-host ranks other than this one
  bool allLocal() const { return static_cast<int>(localPeers_.size()) + 1 == nranks_; }
  int localRanks() const { return static_cast<int>(localPeers_.size()) + 1; }
  // Every same-host rank is its own process and can read every other one by CMA. Computed from what every rank
  // reported at setup, so every rank of the host holds the same value and may base a choice that all of them must
  // make alike on it.
  bool cmaBetweenAllRanks() const { return cmaBetweenAllRanks_; }
  // Some rank of this host found its kernel copies (process_vm_readv) under kSlowKernelCopyRatio of memcpy's rate at
  // setup (kernel_copy_probe.hpp). From every rank's report, so alike on every rank of the host.
  bool kernelCopiesSlow() const { return kernelCopiesSlow_; }
  // The ranks of this machine, the host's among them, are no more than the CPUs their masks cover together
  // (IntraNodeSetup::machineRanksOwnCpus, from every rank's mask in the bootstrap table), so alike on every rank of
  // the host even where their masks differ.
  bool ranksOwnCpus() const { return ranksOwnCpus_; }
  // Whether the host's ranks share a last-level cache, as the cache sharing probe measured it at setup between the
  // lowest local rank and every other (cache_sharing_probe.hpp), or TERN_SHM_SHARED_CACHE said. Measured only where
  // kernel copies are slow and the ranks own their CPUs (the CMA learner's prior depends on it only there), kUnknown
  // elsewhere. The lowest rank's answer, so alike on every rank of the host.
  CacheSharing cacheSharing() const { return cacheSharing_; }

  RankControl& ctrl(int p) { return *peers_[p].ctrl; }
  char* base(int p) { return peers_[p].segment.data(); }
  char* small(int p, uint32_t half) {
    return base(p) + layout_.smallOffset + static_cast<size_t>(half & 1) * layout_.smallHalfBytes;
  }
  char* stage(int p, uint32_t slot) {
    return base(p) + layout_.stageOffset + static_cast<size_t>(slot % kStageSlots) * kStageSlotBytes;
  }
  // The FIFO ring carrying messages from rank `from` to rank `to` (it lives in the producer's segment).
  RingHeader* ring(int from, int to) {
    return reinterpret_cast<RingHeader*>(base(from) + layout_.ringsOffset +
                                         static_cast<size_t>(to) * layout_.ringBytes);
  }
  char* ringSlot(int from, int to, uint64_t index) {
    return reinterpret_cast<char*>(ring(from, to)) + sizeof(RingHeader) + (index % layout_.ringSlots) * kRingSlotBytes;
  }

  // Name tag of this job's segments: derived from the job secret (FNV-1a 64 of its bytes, 16 hex digits) rather than
  // the secret itself, because /dev/shm names are visible to every local user while the secret authenticates
  // connections.
  static std::string jobTag(const Secret& secret);

 private:
  Mesh() = default;

  int rank_ = 0;
  int nranks_ = 0;
  Layout layout_;
  std::vector<PeerView> peers_;
  std::vector<int> localPeers_;
  bool peersMapMyBuffers_ = false;  // every same-host peer reads this rank's registered buffers in place (logged)
  bool cmaBetweenAllRanks_ = false;
  bool kernelCopiesSlow_ = false;
  bool ranksOwnCpus_ = false;
  CacheSharing cacheSharing_ = CacheSharing::kUnknown;
};

}  // namespace tern::shm
