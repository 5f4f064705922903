// The parameters of the cost model: alpha (seconds of latency per message) and beta (seconds per byte) of every link
// class, gamma (seconds per byte of an element-wise reduction) and the copy cost of CPU and GPU ranks, and codec
// throughputs. Defaults come from the topology (its per-path bandwidth and latency) and from the tables below; a
// calibration file (planner/calibration.hpp, TERN_TUNE_FILE) overrides any of them with measured values.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "planner/model_link.hpp"

namespace tern::planner {

struct LinkCost {
  double alpha = 0;  // seconds, one message, one hop
  double beta = 0;   // seconds per byte
};

// A measured link class. For the network, speedGbps is the line rate the measurement was made at: on a topology
// with another line rate the measured efficiency carries over (beta scales by speedGbps / line rate), so a
// calibration made on 1 Gb/s Ethernet still says something useful about 10 Gb/s.
struct LinkCalibration {
  LinkCost cost;
  double speedGbps = -1;  // network only; -1: beta applies as is
};

struct ComputeCost {
  double reduceBeta = 0;  // seconds per output byte of a reduction (reads two operands, writes one)
  double copyBeta = 0;    // seconds per byte of a memory copy
};

// Seconds per byte of fp32 data to encode / decode with a codec, on one CPU core.
struct CodecSpeed {
  double encodeBeta = 0;
  double decodeBeta = 0;
};

// The shared-memory "direct" collectives (every rank reads its peers' buffers; src/transport/shm) are not made of
// messages, so they are not simulated: time = alpha + bytes x busFactor x beta, i.e. 1/beta is their bus bandwidth.
struct DirectCost {
  double alpha = 0;
  double beta = 0;
};

struct CostParams {
  // Calibrated link classes, by name: a ModelLink name ("shm", "loopback", "nvlink", "pcie", "smp", "network"), or
  // "network:<kind>" ("network:ethernet", "network:roce", "network:ib") for one network kind only.
  std::map<std::string, LinkCalibration> links;
  ComputeCost cpu;
  ComputeCost gpu;
  // Codec overrides by spec ("qsgd:4:512") or codec name ("qsgd"); the rest come from compress::codecCost.
  std::map<std::string, CodecSpeed> codecs;
  std::optional<DirectCost> shmDirect;

  // The calibration for a class (network: the kind's entry first, then "network"); nullptr when none.
  const LinkCalibration* find(ModelLink c, topo::NetKind kind = topo::NetKind::kUnknown) const;
};

// Defaults: no calibrated links, CPU reduce 6 GB/s and copy 10 GB/s (one core, AVX2, data larger than the caches),
// GPU reduce and copy 1000 GB/s (HBM), no direct-path figure (the shm transport's own estimate applies).
CostParams defaultCostParams();

// Figures for link classes the topology has no number for (loopback), and for a cost model without a topology.
LinkCost defaultLinkCost(ModelLink c);

// Encode/decode cost of a codec spec: the calibration's entry when there is one, else compress::codecCost. Throws
// Error(ternInvalidArgument) for a bad spec.
CodecSpeed codecSpeed(const CostParams& params, const std::string& spec);

}  // namespace tern::planner
