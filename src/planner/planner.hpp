// The planner: the one cost model behind algorithm selection (core/algo_choice.hpp), ternQueryAlgorithm's
// prediction and tern-calc.
//
// It prices a candidate by building that algorithm's schedule for every rank, exactly as the communicator would
// (same BuildOptions: chunk size, ring order, host map), and simulating them all on the job's links
// (planner/simulator.hpp). What is priced is therefore what runs, including pipelining, the NIC sharing of the
// ranks of a host, and the order in which a schedule's messages and reductions happen.
//
// Keeping it fast:
//  - estimates are memoized per (collective, bytes, algorithm, element size); selection looks rankings up per
//    (collective, size bucket, element size), a bucket being a quarter of an octave of sizes, priced at the
//    bucket's representative size (so every rank decides the same way whatever size it saw first);
//  - large messages: a buffer of C chunks with C above max(4p, 64) is simulated at Cmax/2 and Cmax chunks instead,
//    and the time extrapolated linearly in the chunk size to the real one. A pipeline of stages costs
//    (stages - 1) x chunk time for filling and draining plus the bottleneck's bytes x beta, which is linear in the
//    chunk size; latency terms stay on the critical path once per stage either way. The extrapolation is exact for
//    that shape and keeps the simulated step count bounded by a few thousand per rank;
//  - above maxSimulatedRanks ranks the closed forms (planner/formulas.hpp) with the job's link costs are used.
// Thread-safe: the memo tables are guarded by a mutex.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/registry.hpp"
#include "exec/collective.hpp"
#include "planner/breakdown.hpp"
#include "planner/cost_params.hpp"
#include "planner/formulas.hpp"
#include "planner/link_table.hpp"
#include "topo/topology.hpp"

namespace tern::planner {

struct PlannerConfig {
  std::shared_ptr<const topo::JobTopology> job;  // required
  IntraTransport intra = IntraTransport::kTopology;
  CostParams params = defaultCostParams();
  size_t pipelineChunkBytes = 512 * 1024;  // BuildOptions::pipelineChunkBytes of the communicator
  std::vector<int> ringOrder;              // empty: topologyRingOrder(job)
  int maxSimulatedRanks = 32;
  // Whether the shared-memory direct collectives are a candidate (single host, shm transport). tern-calc sets it
  // for shm jobs; the communicator compares the transport's own estimate instead (compareWithDirect).
  bool directCandidate = false;
};

struct Estimate {
  std::string algorithm;
  double seconds = 0;
  Breakdown critical;             // what the time is made of, along the critical path
  std::string busiestPort;        // e.g. "host roce25-0 nic0 (mlx5_0) egress"; empty when nothing is sent
  double busiestUtilization = 0;  // busy seconds / seconds
  int busiestUsers = 0;           // ranks sharing that port
  bool simulated = true;          // false: closed form (more ranks than maxSimulatedRanks)
  std::string error;              // non-empty: this algorithm cannot be priced (builder error)
};

// The order of every ranking, for std::stable_sort: estimates that priced (no error, seconds >= 0) first, cheapest
// first; the rest after them, in their original order.
inline bool cheaperEstimate(const Estimate& a, const Estimate& b) {
  const bool aok = a.error.empty() && a.seconds >= 0, bok = b.error.empty() && b.seconds >= 0;
  if (aok != bok) return aok;
  return aok && a.seconds < b.seconds;
}

// Compressed collectives leave smaller calls uncompressed (the default of TERN_COMPRESS_MIN_BYTES).
inline constexpr double kCompressMinBytes = 64 * 1024;

// The nccl-tests bus bandwidth factor of a collective on p ranks: allreduce 2(p-1)/p; allgather, reduce-scatter,
// alltoall (p-1)/p; broadcast, reduce, sendrecv 1.
double busFactor(Collective c, int p);

// The collective's arguments for a total size in bytes (nccl-tests "size"): counts per rank for allgather,
// reduce-scatter and alltoall, whole counts otherwise; at least one element.
CollArgs argsForBytes(Collective c, double bytes, int nranks, ternDataType_t dtype = ternFloat32);
// The inverse: the total bytes of a call.
double bytesOfArgs(const CollArgs& args, int nranks);
// Bytes of input and output one rank touches in a call of `bytes` total (for the cache term of CostParams).
double workingSetBytes(Collective c, double bytes, int nranks);

class Planner {
 public:
  explicit Planner(PlannerConfig config);

  int nranks() const { return links_->nranks(); }
  const topo::JobTopology& job() const { return *config_.job; }
  const PlannerConfig& config() const { return config_; }
  const LinkTable& links() const { return *links_; }
  // What the communicator must build schedules with for the predictions to hold (chunk size, ring order, hosts).
  const BuildOptions& buildOptions() const { return build_; }
  int numHosts() const { return hosts_; }

  // Registered algorithms of c that make sense on this job, in registry order ("hier" needs two hosts, one of them
  // with two ranks; the direct path is added last when directCandidate is set).
  std::vector<std::string> candidates(Collective c) const;

  // Predicted time of one algorithm (memoized): a schedule-built entry simulated, a shared-memory one by its cost
  // function, "shm_direct" as estimateDirect. A name the catalogue does not know gives an Estimate with error set.
  Estimate estimate(Collective c, double bytes, const std::string& algorithm, ternDataType_t dtype = ternFloat32) const;
  // A compressed collective with a codec spec (compress/codec_factory.hpp); fp32 data. The cheapest of its forms
  // (rankCompressed): what the communicator runs unless TERN_COMPRESS_HIER forces one.
  Estimate estimateCompressed(Collective c, double bytes, const std::string& codecSpec) const;
  // Every form of the compressed collective that applies to this job, cheapest first (failed estimates last): the
  // flat form and, for allreduces with a dense codec on equal nodes of >= 2 ranks, compressed_hier (compress only
  // between nodes). Which wins depends on the link speeds and the codec: hier saves network bytes, and pays an
  // uncompressed reduce-scatter and allgather inside every node for it.
  std::vector<Estimate> rankCompressed(Collective c, double bytes, const std::string& codecSpec) const;
  // One form: hierarchical selects compressed_hier (an estimate with error set where it does not apply).
  Estimate estimateCompressedForm(Collective c, double bytes, const std::string& codecSpec, bool hierarchical) const;
  // The shared-memory direct path (CostParams::shmDirect, or its default); seconds < 0 when it does not apply.
  Estimate estimateDirect(Collective c, double bytes) const;
  // One shared-memory entry of the catalogue (estimate() with its name): its own cost function with
  // CostParams::shmAlgorithms; an error where the job or the arguments rule it out.
  Estimate estimateSharedMemory(const AlgorithmInfo& entry, double bytes, ternDataType_t dtype) const;
  // Whether the schedules over the shm transport have measured figures ("shm" in the calibration). Until they do,
  // the direct path wins wherever it applies: the transport chose it for the call, and an unmeasured default is
  // no ground for overruling it (selection and tern-calc both follow this).
  bool shmSchedulesCalibrated() const { return config_.params.find(ModelLink::kShm) != nullptr; }
  // The calibrated direct-path time (CostParams::shmDirect), whatever the job; -1 when the parameters have none.
  double calibratedDirectSeconds(Collective c, double bytes) const;

  // Every candidate, cheapest first (ties: registry order); failed estimates last.
  std::vector<Estimate> rank(Collective c, double bytes, ternDataType_t dtype = ternFloat32) const;

  // Selection: the ranking of a size bucket, computed once; *fresh tells whether this call computed it (so the
  // caller logs each decision once).
  struct Ranking {
    int bucket = 0;
    double bytes = 0;  // the representative size it was priced at
    std::vector<Estimate> ranked;
  };
  std::shared_ptr<const Ranking> ranking(Collective c, double bytes, ternDataType_t dtype, bool* fresh) const;
  static int sizeBucket(double bytes);
  static double bucketBytes(int bucket);

  // The uniform-link inputs of the closed forms for this job: the slowest intra-host class, the network, how many
  // ranks share a NIC. Flat algorithms on several hosts see the network (shared by every rank of a host unless
  // the algorithm is a ring or chain, whose node-contiguous order gives one stream per NIC).
  FormulaInputs formulaInputs(Collective c, const std::string& algorithm, double bytes) const;

 private:
  Estimate simulateAlgorithm(Collective c, double bytes, const std::string& algorithm, ternDataType_t dtype) const;
  Estimate closedFormEstimate(Collective c, double bytes, const std::string& algorithm) const;
  Estimate runSimulation(Collective c, const CollArgs& args, const std::string& algorithm, size_t chunkBytes,
                         const std::string& codecSpec) const;
  Estimate scaledSimulation(Collective c, const CollArgs& args, double bytes, const std::string& algorithm,
                            const std::string& codecSpec) const;

  PlannerConfig config_;
  std::unique_ptr<LinkTable> links_;
  BuildOptions build_;
  int hosts_ = 1;
  int maxPerHost_ = 1;

  mutable std::mutex mutex_;
  mutable std::map<std::tuple<int, double, std::string, int>, Estimate> estimates_;
  mutable std::map<std::tuple<int, int, int>, std::shared_ptr<const Ranking>> rankings_;
};

}  // namespace tern::planner
