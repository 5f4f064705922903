// The direct intra-node collectives: allreduce, reduce-scatter, allgather, broadcast, reduce and barrier run by
// reading peers' data in shared memory instead of exchanging messages, when every rank of the communicator is on
// this host.
//
// Two algorithms (see small_collective.cpp and pipelined_*.cpp):
//   shm_direct_small - one phase through the small areas, for payloads up to kSmallBytes per rank;
//   shm_direct       - chunked reduce-own-slice-then-gather through staging slots, or in place.
//
// Zero copy: a rank's buffer is read in place by its peers, skipping the staging copy, when every same-host peer
// can address it: peers that are threads of the same process always can; peers in other processes can when the
// buffer lies inside one ternMemAlloc allocation (a memfd they map via /proc/<pid>/fd, once, then cache) and setup
// found that they may open our file descriptors. Input and output are judged separately, per call; the rest of the
// call is unchanged, so a mix of registered and ordinary buffers across ranks works.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/collective.hpp"
#include "core/executor.hpp"
#include "core/operation.hpp"
#include "transport/shm/buffer_registry.hpp"
#include "transport/shm/direct_call.hpp"
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

enum class DirectAlgorithm { kNone, kSmall, kPipelined };

class DirectCollectives {
 public:
  DirectCollectives(Mesh* mesh, Watchdog* dog, const SpinPolicy& spin);

  // Which algorithm would run args (kNone: not handled here).
  DirectAlgorithm choose(const CollArgs& args) const;
  // Runs op (which choose() accepted). Throws tern::Error on failure.
  void run(Operation& op, const ExecContext& ctx, DirectAlgorithm algo);

  // Largest per-rank payload of the one-phase algorithm, for a collective.
  size_t smallLimit(Collective c) const;
  // Pipeline chunk, in bytes of one rank's buffer, for a payload of bytes per rank.
  size_t chunkBytes(size_t bytes) const;

 private:
  bool zeroCopyFor(const void* p, size_t bytes, BufferRef* ref) const;
  const char* resolve(int peer, const BufferRef& ref, size_t bytes);
  void describeCall(DirectCall& c, Operation& op);

  Mesh* mesh_;
  Watchdog* dog_;
  SpinBudget spin_;
  uint32_t smallSeq_ = 0;
  uint32_t callSeq_ = 0;
  uint32_t chunkSeq_ = 0;
  std::unique_ptr<char[]> tmp_;
  std::unique_ptr<char[]> cmaBuf_;  // pieces read from peers by the CMA allreduce (kStageSlotBytes)
  PeerMappings mappings_;
  HugePageAdvisor hugePages_;  // for the buffers peers reach by CMA
  DirectCall call_;
};

}  // namespace tern::shm
