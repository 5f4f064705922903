// The parameters of the cost model: alpha (seconds of latency per message) and beta (seconds per byte) of every link
// class, gamma (seconds per byte of an element-wise reduction) and the copy cost of CPU and GPU ranks, and codec
// throughputs. Defaults come from the topology (its per-path bandwidth and latency) and from the tables below; a
// calibration file (planner/calibration.hpp, TERN_TUNE_FILE) overrides any of them with measured values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/shm/direct_cost.hpp"
#include "planner/model_link.hpp"

namespace tern::planner {

struct LinkCost {
  double alpha = 0;  // seconds, one message, one hop
  double beta = 0;   // seconds per byte
};

// CPU-copied bytes move faster while a call's data stays in the CPU caches. A cache level says: while the call's
// per-rank working set (the input and output bytes it touches) fits in `bytes`, the cost per byte is `beta`. Levels
// are kept in ascending size; a working set W is served by each level in proportion min(1, bytes / W) (a streaming
// working set k times a cache leaves 1/k of it resident), the rest at the entry's out-of-cache figure.
struct CacheLevel {
  double bytes = 0;
  double beta = 0;  // seconds per byte (links, the direct path) or a cost multiplier (codecs)
};
using CacheLevels = std::vector<CacheLevel>;

// The weights of each level and, last, of the out-of-cache figure for a working set; they sum to 1.
std::vector<double> cacheWeights(const CacheLevels& levels, double workingSetBytes);
// beta blended over the levels for a working set (beta itself without levels).
double cachedBeta(double beta, const CacheLevels& levels, double workingSetBytes);

// A measured link class. For the network, speedGbps is the line rate the measurement was made at: on a topology
// with another line rate the measured efficiency carries over (beta scales by speedGbps / line rate), so a
// calibration made on 1 Gb/s Ethernet still says something useful about 10 Gb/s. Same-host classes may have cache
// levels (their copies run faster in cache).
struct LinkCalibration {
  LinkCost cost;           // cost.beta: the out-of-cache (large message) figure
  double speedGbps = -1;   // network only; -1: beta applies as is
  CacheLevels cache = {};  // same-host classes only
};

struct ComputeCost {
  double reduceBeta = 0;  // seconds per output byte of a reduction (reads two operands, writes one)
  double copyBeta = 0;    // seconds per byte of a memory copy
};

// Seconds per byte of fp32 data to encode / decode with a codec, on one CPU core; cache levels scale both (their
// beta is the cost multiplier while the working set fits).
struct CodecSpeed {
  double encodeBeta = 0;
  double decodeBeta = 0;
  CacheLevels cache = {};
};

// The shared-memory "direct" collectives (every rank reads its peers' buffers; src/algorithms/shm) are not made of
// messages, so they are not simulated: time = alpha + bytes x busFactor x beta, i.e. 1/beta is their bus bandwidth.
struct DirectCost {
  double alpha = 0;
  double beta = 0;
  CacheLevels cache = {};
};

// The shared-memory algorithms' own parameters (algorithms/shm/direct_cost.hpp: the catalogue's entries price
// themselves with them), used where no "shm_direct" figure is calibrated.
using ShmAlgorithmCost = shm::ShmAlgorithmCost;

struct CostParams {
  // Calibrated link classes, by name: a ModelLink name ("shm", "loopback", "nvlink", "pcie", "smp", "network"), or
  // "network:<kind>" ("network:ethernet", "network:roce", "network:ib") for one network kind only.
  std::map<std::string, LinkCalibration> links;
  ComputeCost cpu;
  ComputeCost gpu;
  // Codec overrides by spec ("qsgd:4:512") or codec name ("qsgd"); the rest come from compress::codecCost.
  std::map<std::string, CodecSpeed> codecs;
  std::optional<DirectCost> shmDirect;
  ShmAlgorithmCost shmAlgorithms;

  // The calibration for a class (network: the kind's entry first, then "network"); nullptr when none.
  const LinkCalibration* find(ModelLink c, topo::NetKind kind = topo::NetKind::kUnknown) const;
};

// Defaults: no calibrated links, CPU reduce 6 GB/s and copy 10 GB/s (one core, AVX2, data larger than the caches),
// GPU reduce and copy 1000 GB/s (HBM), no direct-path figure (the shared-memory algorithms' own model,
// shmAlgorithms, applies).
CostParams defaultCostParams();

// Figures for link classes the topology has no number for (loopback), and for a cost model without a topology.
LinkCost defaultLinkCost(ModelLink c);

// The multiplier of a codec's cost for a working set (1 without cache levels).
inline double codecCacheFactor(const CodecSpeed& s, double workingSetBytes) {
  return cachedBeta(1.0, s.cache, workingSetBytes);
}

// Encode/decode cost of a codec spec: the calibration's entry when there is one, else compress::codecCost (encode
// with error feedback, which the compressed collectives always use). Throws
// Error(ternInvalidArgument) for a bad spec.
CodecSpeed codecSpeed(const CostParams& params, const std::string& spec);

}  // namespace tern::planner
