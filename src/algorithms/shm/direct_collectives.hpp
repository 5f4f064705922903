// The direct intra-node collectives: allreduce, reduce-scatter, allgather, broadcast, reduce and barrier run by
// reading peers' data in shared memory instead of exchanging messages, when every rank of the communicator is on
// this host. They are catalogue entries (algorithms/registry.hpp, shm_catalogue.hpp):
//   shm_small     - one phase through the small areas, for payloads up to kSmallBytes per rank (small_collective.cpp);
//   shm_pipelined - chunked reduce-own-slice-then-gather through staging slots, or in place (pipelined_*.cpp);
//   shm_cma       - one pass reading peers' ordinary buffers by CMA (cma_*.cpp);
//   shm_mapped    - one-pass allreduce over buffers every rank addresses (mapped_allreduce.cpp).
// By default the arguments choose between small and the chunked ones (defaultShmAlgorithm), and every rank's
// buffers then choose among pipelined, CMA and mapped, the same way on every rank (describeCall). TERN_ALGO may
// force one (an error on every rank where it cannot run) or exclude one.
//
// Zero copy: a rank's buffer is read in place by its peers, skipping the staging copy, when every same-host peer
// can address it: peers that are threads of the same process always can; peers in other processes can when the
// buffer lies inside one ternMemAlloc allocation (a memfd they map via /proc/<pid>/fd, once, then cache) and setup
// found that they may open our file descriptors. Input and output are judged separately, per call; the rest of the
// call is unchanged, so a mix of registered and ordinary buffers across ranks works.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/shm/cma_learner.hpp"
#include "algorithms/shm/direct_call.hpp"
#include "algorithms/shm/shm_catalogue.hpp"
#include "exec/collective.hpp"
#include "exec/executor.hpp"
#include "exec/operation.hpp"
#include "transport/shm/buffer_registry.hpp"
#include "transport/shm/flag_wait.hpp"
#include "transport/shm/huge_page_advisor.hpp"
#include "transport/shm/mesh.hpp"
#include "transport/shm/watchdog.hpp"

namespace tern::shm {

// Which buffers may be read in place (tests use it to cover every path with ranks that are threads).
enum class ZeroCopyMode {
  kAuto,            // same-process peers directly, registered buffers by mapping
  kStagedOnly,      // never: everything goes through staging
  kRegisteredOnly,  // registered buffers only, mapped even between threads of one process (exercises the mapping)
};
void setZeroCopyModeForTesting(ZeroCopyMode mode);

// Counts the algorithm every call of the process runs while on (tests check what a forced TERN_ALGO ran).
void countRunsForTesting(bool on);
uint64_t runsForTesting(ShmAlgorithm algo);

// What runs a call: the algorithm (kSmall, or one of the chunked ones), whether TERN_ALGO forced it (then it runs
// exactly that or fails on every rank), and which one-pass forms the chunked default may take.
struct ShmPlan {
  ShmAlgorithm algo = ShmAlgorithm::kNone;
  bool forced = false;
  bool allowCma = true;
  bool allowMapped = true;
};

// The plan for a forced algorithm: that one and no other form.
ShmPlan forcedShmPlan(ShmAlgorithm algo);

class DirectCollectives {
 public:
  DirectCollectives(Mesh* mesh, Watchdog* dog, const SpinPolicy& spin);

  // Runs op with plan (plan.algo != kNone, and shmApplies to op.args) and returns the form that ran (the plan's, or
  // what a pipelined plan settled on for these buffers). Throws tern::Error on failure, and ternInvalidUsage on
  // every rank when a forced one-pass form cannot run these buffers.
  ShmAlgorithm run(Operation& op, const ExecContext& ctx, const ShmPlan& plan);

  // The algorithm plan leads to for args with ordinary (not ternMemAlloc) buffers on this mesh: what
  // ternQueryAlgorithm reports. Registered buffers may take the mapped form instead.
  ShmAlgorithm expectedAlgorithm(const CollArgs& args, const ShmPlan& plan) const;
  // Whether the CMA form should replace the one-phase form that the catalogue's default picked for args: it could
  // (cmaCouldReplaceOnePhase) and the CMA learner offers it for this call, all alike on every rank, so all of them
  // take the chunked path together.
  bool cmaReplacesOnePhase(const CollArgs& args) const;

  // Pipeline chunk, in bytes of one rank's buffer, for a payload of bytes per rank.
  size_t chunkBytes(size_t bytes) const;

  // Whether every peer on this host can address [p, p + bytes) in place (threads of this process, or registered
  // memory they map); fills ref, the descriptor peers resolve, either way.
  bool zeroCopyFor(const void* p, size_t bytes, BufferRef* ref) const;
  // Where a peer's buffer that it described with ref lies in this process (its registered segment mapped on first
  // use); bytes: how much of it, from ref's start, is accessed. Throws ternSystemError when it cannot be mapped.
  const char* resolve(int peer, const BufferRef& ref, size_t bytes);

 private:
  // Whether the size rules (and TERN_ALGO) give args to a CMA form, whatever the buffers: the calls the learner
  // counts, alike on every rank.
  bool cmaSizeAdmits(const CollArgs& args, const ShmPlan& plan) const;
  // Whether the learner has agreed that the CMA forms lose to staging for calls like args.
  bool cmaAvoided(const CollArgs& args) const;
  // The learner's bands for a call: in place or not, where that may differ between ranks without harm.
  CmaKey learnerKey(const CollArgs& args) const;
  // Whether a CMA form could replace the one-phase form for args: it has one, the size reaches its minimum
  // (shmCmaMinBytes), and every rank of the host can read every other, which every rank knows alike
  // (Mesh::cmaBetweenAllRanks).
  bool cmaCouldReplaceOnePhase(const CollArgs& args) const;
  void describeCall(DirectCall& c, Operation& op, const ShmPlan& plan);
  void runCall(Operation& op, const ExecContext& ctx, const ShmPlan& plan);

  Mesh* mesh_;
  Watchdog* dog_;
  SpinBudget spin_;
  uint32_t smallSeq_ = 0;
  uint32_t callSeq_ = 0;
  uint32_t chunkSeq_ = 0;
  ShmAlgorithm ran_ = ShmAlgorithm::kNone;  // the form the current (or last) call runs
  std::unique_ptr<char[]> tmp_;
  std::unique_ptr<char[]> cmaBuf_;  // pieces read from peers by the CMA allreduce (kStageSlotBytes)
  PeerMappings mappings_;
  HugePageAdvisor hugePages_;  // for the buffers peers reach by CMA
  CmaLearner cmaLearner_;      // whether the CMA forms pay on this host (TERN_SHM_CMA_LEARN)
  bool learnsCma_ = false;     // the current call is one the learner counts
  size_t learnBytes_ = 0;      // its band's bytes (alltoallv: the mean input per rank, from every rank's table)
  // When it started (read only when learnsCma_: the small calls the learner never counts skip the clock).
  std::chrono::steady_clock::time_point learnStart_;
  DirectCall call_;
};

}  // namespace tern::shm
