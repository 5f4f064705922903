// Which engine runs an uncompressed stream-ordered call on device buffers (tern_cuda.h), priced by the one cost model:
//  - "nccl": NVIDIA's NCCL over the GPUs' own links. Priced as the catalogue's cheapest algorithm on the job's GPU
//    placements (NVLink, PCIe switches, the GPUs' paths to their NICs: the planner over the GPU ranks), plus one
//    kernel launch. NCCL's own algorithms are of the same families (ring, tree), so the best of tern's catalogue on
//    the same links is the model's stand-in for what NCCL achieves.
//  - "staged": the host path on pinned copies (core/staged_device_calls.hpp): the input copied to host memory and
//    the result back over each GPU's PCIe path to its CPU, a host callback and a stream wait, and in between the
//    host collective the communicator itself would run (its own choice and estimate).
// Every rank prices alike (the same job topology and parameters), so every rank picks the same engine.
#pragma once

#include <string>
#include <vector>

#include "exec/collective.hpp"
#include "topo/topology.hpp"

namespace tern {

namespace planner {
class Planner;
}  // namespace planner

struct DeviceEngineEstimate {
  std::string engine;     // "nccl" or "staged"
  std::string algorithm;  // what the engine runs: the catalogue algorithm priced on the GPUs' links, or the host one
  double seconds = -1;    // < 0: not priced (see rankDeviceEngines)
};

// Fixed costs beside the links' (order-of-magnitude figures of current GPUs and drivers, overridden by nothing yet:
// the engines' link terms dominate from a few hundred kilobytes on):
inline constexpr double kNcclLaunchSeconds = 5e-6;   // one NCCL kernel launch on the stream
inline constexpr double kStagedSyncSeconds = 20e-6;  // a host callback plus the stream's wait on the done flag
inline constexpr double kDefaultHostCopyGBs = 25.0;  // a GPU's PCIe Gen4 x16 path, when the job has no GPU node

// Seconds to copy `bytes` between rank's GPU and host memory: over the best path from its GPU to one of its host's
// NUMA nodes (the PCIe links on the way), or at kDefaultHostCopyGBs when the job does not place rank on a GPU.
double deviceHostCopySeconds(const topo::JobTopology& job, int rank, double bytes);

// Both engines for args, cheapest first (unpriced last). device: the planner over the job's GPU placements, or
// nullptr when the job places no rank on a GPU (then NCCL is not priced: the model knows nothing of the GPUs'
// links, and NCCL, where every rank has it, is the prior). hostAlgorithm and hostSeconds: the communicator's own
// choice for the call on host memory and its prediction.
std::vector<DeviceEngineEstimate> rankDeviceEngines(const CollArgs& args, int nranks, const topo::JobTopology& job,
                                                    const planner::Planner* device, const std::string& hostAlgorithm,
                                                    double hostSeconds);

}  // namespace tern
