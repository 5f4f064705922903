// Calibration: fitting the cost model's parameters to measured perf results.
//
// Each measurement is a (run, size, time). The model's prediction for it is a simulation whose finish time is a sum
// of terms along the critical path (planner/breakdown.hpp): latency terms alpha_c x (messages of class c on the
// path) and transfer terms beta_c x (bytes of class c on the path), plus reductions, copies and codec work at their
// known costs. Given the path, the time is linear in the unknowns, so the fit is a linear least-squares problem:
//
//     time_i - fixed_i = sum_c  L_ic alpha_c + B_ic beta_c  (+ K_i kappa for the codec's cost multiplier)
//
// weighted by 1/predicted_i (relative errors of the predicted bus bandwidth, so 1 MB and 256 MB count alike). The
// path and the weights change with the parameters, so the fit re-simulates with the new values and solves again
// until they settle (a few rounds of iteratively reweighted least squares).
// Negative latencies are clamped to zero (the column is dropped and the rest re-solved).
//
// Cache effects: CPU-copied bytes (same-host classes, the direct path, codec kernels) move faster while a call's
// working set fits in a cache. With the cache sizes fixed, a class's beta is a weighted sum of its out-of-cache
// and per-level figures (cost_params.hpp: cacheWeights), still linear in them, and likewise a codec's multipliers.
// The sizes are searched per group (each same-host class, the direct path, each codec) over 256 KiB .. 256 MiB:
// first one level per group, then a second. A level must be plausible (faster than the out-of-cache figure, and
// no faster than a smaller level) and is kept only when it predicts measured sizes left out of the fit clearly
// better (leave-one-size-out): an extra level always fits in-sample, and on a few noisy sizes it would otherwise
// place a steep, fast step wherever the next unseen size happens to fall.
//
// Runs whose algorithm is the shared-memory direct path (not a schedule) fit the direct model alone:
// time = alpha + bytes x busFactor x beta. Compressed runs (perf -Z) fit a multiplier of the codec's
// encode/decode cost, with the link classes they share with uncompressed runs fitted jointly.
#pragma once

#include <string>
#include <vector>

#include "planner/cost_params.hpp"
#include "planner/perf_records.hpp"
#include "planner/planner.hpp"
#include "topo/topology.hpp"

namespace tern::planner {

struct FitOptions {
  topo::NetKind netKind = topo::NetKind::kEthernet;  // what the runs' hosts were joined by
  double netGbps = -1;  // its line rate, recorded with the fit; -1 unknown (the fit is then absolute)
  double minBytes = 0;  // measurements below this size are left out
  int maxRounds = 30;
  bool fitCache = true;  // also try cache levels (CacheLevel) for same-host classes, the direct path, codecs
};

struct FitPoint {
  std::string source;
  std::string collective;
  int nranks = 0;
  int nodes = 1;
  std::string transport;
  std::string algorithm;  // what ran
  double bytes = 0;
  double measured = 0;   // seconds
  double predicted = 0;  // seconds, with the fitted parameters
  double busFactor = 1;  // for busbw = bytes / time / 1e9 x busFactor
};

struct FitResult {
  CostParams params;                // the start parameters with the fitted ones replaced
  std::vector<std::string> fitted;  // "loopback alpha/beta", "network:ethernet alpha/beta", "shm_direct", "codec sign"
  std::vector<FitPoint> points;
  double rmsError = 0;  // relative, over the points
  double maxError = 0;
  int rounds = 0;
};

// The job a run ran on: nodes x (nranks / nodes) CPU ranks, joined by the network of the options.
topo::JobTopology runJob(const PerfRun& run, const FitOptions& options);

// The model's prediction for every point of the runs with these parameters (for tern-calc --check).
std::vector<FitPoint> predictRuns(const std::vector<PerfRun>& runs, const CostParams& params,
                                  const FitOptions& options);

// Fits the link classes (and direct path, codecs) the runs exercise. Throws Error(ternInvalidArgument) when
// nothing can be fitted.
FitResult fitCalibration(const std::vector<PerfRun>& runs, const CostParams& start, const FitOptions& options);

}  // namespace tern::planner
