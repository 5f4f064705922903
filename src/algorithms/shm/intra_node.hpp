// The intra-node (same host) fast path: a shared-memory transport for point-to-point traffic between ranks on one
// host, and "direct" collectives in which every rank reads its peers' buffers in shared memory instead of
// exchanging messages. The communicator creates one per communicator after the TCP mesh is up (the TCP
// connections carry the setup handshake and stay open as the liveness channel: a peer that dies closes them).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/shm/direct_cost.hpp"
#include "exec/executor.hpp"
#include "exec/operation.hpp"
#include "transport/shm/intra_node_setup.hpp"
#include "transport/transport.hpp"

namespace tern {

class IntraNode {
 public:
  virtual ~IntraNode() = default;

  // Runs op with a direct shared-memory algorithm when it applies (e.g. every rank of the communicator is on this
  // host and the collective/size is one it handles) and returns the algorithm's name (static storage); returns
  // nullptr to let the schedule path run it.
  virtual const char* tryRun(Operation& op, const ExecContext& ctx) = 0;

  // Transport for point-to-point traffic with same-host peers (FIFO semantics of transport.hpp), or nullptr.
  virtual Transport* transport() = 0;

  // Predicted time in seconds of the direct algorithm for this collective, or a negative value if it does not
  // apply (the planner compares it with the schedule algorithms' cost).
  virtual double predictSeconds(const CollArgs& args) const = 0;

  // Name of the direct algorithm that tryRun would use for args ("" if none).
  virtual std::string algorithmFor(const CollArgs& args) const = 0;
};

// Collective over the communicator: every rank calls it (ranks alone on their host too). Returns nullptr when
// TERN_SHM_DISABLE=1 or no two ranks share a host. cost: the cost model's parameters of the shared-memory
// algorithms (planner::CostParams::shmAlgorithms of the process's tune file, which this layer cannot read: the
// planner is above it), asked for once the direct path is made. algo: the communicator's algorithm selection in
// TERN_ALGO syntax (TERN_ALGO, or ternConfig_t.algo where the caller gave one), already validated.
std::unique_ptr<IntraNode> createIntraNode(const IntraNodeSetup& setup, const std::string& algo,
                                           const std::function<shm::ShmAlgorithmCost()>& cost);

}  // namespace tern
