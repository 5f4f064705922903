#include "planner/planner.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "algorithms/compressed.hpp"
#include "algorithms/registry.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "compress/codec_factory.hpp"
#include "planner/ring_order.hpp"
#include "planner/simulator.hpp"

namespace tern::planner {

namespace {

constexpr const char* kDirectName = "shm_direct";

// The shared-memory direct collectives when nothing measured says otherwise: a few microseconds of flag
// handshakes, and about one core's memcpy bandwidth as bus bandwidth.
const DirectCost kDefaultDirect{2e-6, 1.0 / 10e9};

bool isDataCollective(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kAlltoAll:
    case Collective::kBarrier:
      return true;
    default:
      return false;
  }
}

}  // namespace

double busFactor(Collective c, int p) {
  p = std::max(p, 1);  // one rank moves nothing: the factor is 0 for the collectives that scale with p
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (p - 1) / p;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAlltoAll:
    case Collective::kAlltoAllv:
      return static_cast<double>(p - 1) / p;
    default:
      return 1.0;
  }
}

CollArgs argsForBytes(Collective c, double bytes, int nranks, ternDataType_t dtype) {
  CollArgs a;
  a.coll = c;
  a.dtype = dtype;
  a.op = ternSum;
  const double e = static_cast<double>(dataTypeSize(dtype));
  double count = bytes / e;
  if (c == Collective::kAllGather || c == Collective::kReduceScatter || c == Collective::kAlltoAll) count /= nranks;
  a.count = c == Collective::kBarrier ? 0 : std::max<size_t>(1, static_cast<size_t>(count));
  return a;
}

double bytesOfArgs(const CollArgs& args, int nranks) {
  double b = static_cast<double>(args.count) * static_cast<double>(dataTypeSize(args.dtype));
  if (args.coll == Collective::kAllGather || args.coll == Collective::kReduceScatter ||
      args.coll == Collective::kAlltoAll) {
    b *= nranks;
  }
  return b;
}

double workingSetBytes(Collective c, double bytes, int nranks) {
  if (c == Collective::kAllGather || c == Collective::kReduceScatter) return bytes * (1.0 + 1.0 / std::max(1, nranks));
  return 2 * bytes;
}

Planner::Planner(PlannerConfig config) : config_(std::move(config)) {
  if (!config_.job || config_.job->ranks.empty()) {
    throwError(ternInvalidArgument, "cost model: no topology (or a topology without ranks)");
  }
  links_ = std::make_unique<LinkTable>(*config_.job, config_.intra, config_.params);
  build_.pipelineChunkBytes = config_.pipelineChunkBytes;
  build_.ringOrder = config_.ringOrder.empty() ? topologyRingOrder(*config_.job) : config_.ringOrder;
  build_.hostOf = hostOfRanks(*config_.job);
  std::map<int, int> perHost;
  for (int h : build_.hostOf) ++perHost[h];
  hosts_ = static_cast<int>(perHost.size());
  for (auto [h, k] : perHost) maxPerHost_ = std::max(maxPerHost_, k);
  if (hosts_ == 1) build_.hostOf.clear();  // as the communicator does: one host needs no map
}

std::vector<std::string> Planner::candidates(Collective c) const {
  std::vector<std::string> out;
  if (!isDataCollective(c)) return out;
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.collective != c) continue;
    const std::string name = a.name;
    // Hierarchical algorithms are a flat ring in disguise on one host, or with one rank per host.
    if (name == "hier" && (hosts_ < 2 || maxPerHost_ < 2)) continue;
    out.push_back(name);
  }
  if (estimateDirect(c, 1024).seconds >= 0) out.emplace_back(kDirectName);
  return out;
}

Estimate Planner::estimate(Collective c, double bytes, const std::string& algorithm, ternDataType_t dtype) const {
  if (algorithm == kDirectName) return estimateDirect(c, bytes);
  if (const AlgorithmInfo* a = findEntry(c, algorithm); a != nullptr && a->family == AlgorithmFamily::kSharedMemory) {
    return estimateSharedMemory(*a, bytes, dtype);
  }
  const auto key = std::make_tuple(static_cast<int>(c), bytes, algorithm, static_cast<int>(dataTypeSize(dtype)));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = estimates_.find(key);
    if (it != estimates_.end()) return it->second;
  }
  Estimate e = nranks() > config_.maxSimulatedRanks ? closedFormEstimate(c, bytes, algorithm)
                                                    : simulateAlgorithm(c, bytes, algorithm, dtype);
  std::lock_guard<std::mutex> lock(mutex_);
  if (estimates_.size() > 8192) estimates_.clear();
  estimates_.emplace(key, e);
  return e;
}

Estimate Planner::simulateAlgorithm(Collective c, double bytes, const std::string& algorithm,
                                    ternDataType_t dtype) const {
  if (findAlgorithm(c, algorithm) == nullptr) {
    Estimate e;
    e.algorithm = algorithm;
    e.error = format("no algorithm '%s' for %s", algorithm.c_str(), collectiveName(c));
    return e;
  }
  const CollArgs args = argsForBytes(c, bytes, nranks(), dtype);
  return scaledSimulation(c, args, bytesOfArgs(args, nranks()), algorithm, "");
}

Estimate Planner::scaledSimulation(Collective c, const CollArgs& args, double bytes, const std::string& algorithm,
                                   const std::string& codecSpec) const {
  const size_t chunk = build_.pipelineChunkBytes;
  const double chunks = chunk == 0 ? 1 : std::ceil(bytes / static_cast<double>(chunk));
  const double most = std::max(4.0 * nranks(), 64.0);
  if (!codecSpec.empty() || chunks <= most) return runSimulation(c, args, algorithm, chunk, codecSpec);
  // Too many chunks to simulate one by one: price two coarser pipelines and extrapolate (see the header).
  const size_t e = std::max<size_t>(1, dataTypeSize(args.dtype));
  const size_t c2 = (static_cast<size_t>(std::ceil(bytes / most)) + e - 1) / e * e;
  const size_t c1 = 2 * c2;
  Estimate fine = runSimulation(c, args, algorithm, c2, codecSpec);
  Estimate coarse = runSimulation(c, args, algorithm, c1, codecSpec);
  if (!fine.error.empty()) return fine;
  if (!coarse.error.empty()) return coarse;
  const double k = (static_cast<double>(chunk) - static_cast<double>(c2)) / static_cast<double>(c1 - c2);
  Estimate out = fine;
  out.seconds = fine.seconds + (coarse.seconds - fine.seconds) * k;
  out.critical = fine.critical + (coarse.critical + fine.critical * -1.0) * k;
  if (out.seconds < 0.5 * fine.seconds) {  // not pipeline-shaped after all: never extrapolate below half
    out.seconds = 0.5 * fine.seconds;
    out.critical = fine.critical * 0.5;
  }
  if (out.seconds > 0) out.busiestUtilization = fine.busiestUtilization * fine.seconds / out.seconds;
  return out;
}

Estimate Planner::runSimulation(Collective c, const CollArgs& args, const std::string& algorithm, size_t chunkBytes,
                                const std::string& codecSpec) const {
  Estimate out;
  out.algorithm = algorithm;
  const int p = nranks();
  BuildOptions bo = build_;
  bo.pipelineChunkBytes = chunkBytes;
  std::unique_ptr<compress::Codec> codec;
  SimCosts costs;
  costs.workingSet = workingSetBytes(c, bytesOfArgs(args, p), p);
  std::vector<Schedule> schedules;
  schedules.reserve(p);
  try {
    const AlgorithmInfo* info = nullptr;
    if (!codecSpec.empty()) {
      codec = compress::makeCodec(codecSpec);
      bo.codec = codec.get();
      // buildCompressed picks compressed_hier from the host map; simulate the algorithm that was named.
      if (algorithm != "compressed_hier") bo.hostOf.clear();
      costs.codec = codecSpeed(config_.params, codecSpec);
    } else {
      info = findAlgorithm(c, algorithm);
    }
    for (int r = 0; r < p; ++r) {
      schedules.push_back(info != nullptr ? info->build(args, r, p, bo) : buildCompressed(args, r, p, bo));
    }
  } catch (const std::exception& e) {
    out.error = format("%s: %s", algorithm.c_str(), e.what());
    return out;
  }
  const SimResult sim = simulate(schedules, *links_, costs);
  if (!sim.error.empty()) {
    out.error = sim.error;
    return out;
  }
  out.seconds = sim.seconds;
  out.critical = sim.critical;
  if (sim.busiestPort >= 0) {
    out.busiestPort = links_->portName(sim.busiestPort);
    out.busiestUsers = links_->portUsers(sim.busiestPort);
    out.busiestUtilization = sim.seconds > 0 ? sim.portBusy[sim.busiestPort] / sim.seconds : 0;
  }
  return out;
}

Estimate Planner::estimateCompressedForm(Collective c, double bytes, const std::string& codecSpec,
                                         bool hierarchical) const {
  const std::string key = "compressed/" + codecSpec;
  const auto memo = std::make_tuple(static_cast<int>(c), bytes, key, hierarchical ? 5 : 4);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = estimates_.find(memo);
    if (it != estimates_.end()) return it->second;
  }
  Estimate e;
  const CollArgs args = argsForBytes(c, bytes, nranks(), ternFloat32);
  try {
    auto codec = compress::makeCodec(codecSpec);
    const char* name = compressedAlgorithmFor(c, *codec, hierarchical);
    if (name == nullptr || *name == '\0') {
      e.algorithm = key;
      e.error = format("%s has no compressed form", collectiveName(c));
    } else if (hierarchical && !compressedHierApplies(args, *codec, build_.hostOf, nranks())) {
      e.algorithm = name;
      e.error = "compressed_hier needs an allreduce with a dense codec on equal nodes of >= 2 ranks";
    } else {
      e = runSimulation(c, args, name, build_.pipelineChunkBytes, codec->spec());
    }
  } catch (const std::exception& ex) {
    e.algorithm = key;
    e.error = ex.what();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  estimates_.emplace(memo, e);
  return e;
}

std::vector<Estimate> Planner::rankCompressed(Collective c, double bytes, const std::string& codecSpec) const {
  std::vector<Estimate> out{estimateCompressedForm(c, bytes, codecSpec, false)};
  Estimate hier = estimateCompressedForm(c, bytes, codecSpec, true);
  if (hier.error.empty()) out.push_back(std::move(hier));
  std::stable_sort(out.begin(), out.end(), cheaperEstimate);
  return out;
}

Estimate Planner::estimateCompressed(Collective c, double bytes, const std::string& codecSpec) const {
  return rankCompressed(c, bytes, codecSpec).front();
}

Estimate Planner::estimateDirect(Collective c, double bytes) const {
  Estimate e;
  e.algorithm = kDirectName;
  e.seconds = -1;
  e.simulated = false;
  const bool applies = config_.directCandidate && hosts_ == 1 && nranks() > 1 &&
                       config_.intra != IntraTransport::kLoopback && c != Collective::kAlltoAll &&
                       c != Collective::kBarrier && isDataCollective(c);
  if (!applies) return e;
  for (int r = 0; r < nranks(); ++r) {
    if (links_->isGpu(r)) return e;
  }
  const DirectCost d = config_.params.shmDirect.value_or(kDefaultDirect);
  const double wire = bytes * busFactor(c, nranks()) * cachedBeta(d.beta, d.cache, workingSetBytes(c, bytes, nranks()));
  e.seconds = d.alpha + wire;
  e.critical.latency[static_cast<int>(ModelLink::kShm)] = d.alpha;
  e.critical.transfer[static_cast<int>(ModelLink::kShm)] = wire;
  e.busiestPort = "shared memory (direct: every rank reads its peers' buffers)";
  e.busiestUsers = nranks();
  e.busiestUtilization = 1;
  return e;
}

Estimate Planner::estimateSharedMemory(const AlgorithmInfo& a, double bytes, ternDataType_t dtype) const {
  Estimate e;
  e.algorithm = a.name;
  e.seconds = -1;
  e.simulated = false;
  bool gpu = false;
  for (int r = 0; r < nranks(); ++r) gpu = gpu || links_->isGpu(r);
  if (hosts_ != 1 || nranks() < 2 || config_.intra == IntraTransport::kLoopback || gpu) {
    e.error = "shared-memory algorithms need two or more CPU ranks, all on one host, with the shm transport";
    return e;
  }
  const CollArgs args = argsForBytes(a.collective, bytes, nranks(), dtype);
  std::string why;
  if (!a.applies(args, nranks(), &why)) {
    e.error = why;
    return e;
  }
  e.seconds = a.cost(args, nranks(), config_.params.shmAlgorithms);
  e.critical.transfer[static_cast<int>(ModelLink::kShm)] = e.seconds;
  e.busiestPort = "shared memory (direct: every rank reads its peers' buffers)";
  e.busiestUsers = nranks();
  e.busiestUtilization = 1;
  return e;
}

double Planner::calibratedDirectSeconds(Collective c, double bytes) const {
  if (!config_.params.shmDirect) return -1;
  const DirectCost& d = *config_.params.shmDirect;
  return d.alpha + bytes * busFactor(c, nranks()) * cachedBeta(d.beta, d.cache, workingSetBytes(c, bytes, nranks()));
}

FormulaInputs Planner::formulaInputs(Collective c, const std::string& algorithm, double bytes) const {
  FormulaInputs in;
  in.p = nranks();
  in.n = bytes;
  in.gamma = links_->compute(0).reduceBeta;
  in.nodes = hosts_;
  in.perNode = std::max(1, nranks() / std::max(1, hosts_));
  // Slowest same-host class, and the network.
  LinkCost intra{0, 0};
  bool haveIntra = false;
  for (int i = 0; i < kNumModelLinks; ++i) {
    const ModelLink m = static_cast<ModelLink>(i);
    if (m == ModelLink::kNetwork || !links_->hasClass(m)) continue;
    const LinkCost lc = links_->classCost(m);
    if (!haveIntra || lc.beta > intra.beta) intra = lc;
    haveIntra = true;
  }
  int share = 1;
  for (int port = 0; port < links_->numPorts(); ++port) {
    if (links_->portName(port).find("egress") != std::string::npos) share = std::max(share, links_->portUsers(port));
  }
  const LinkCost net = links_->classCost(ModelLink::kNetwork);
  in.alphaNet = net.alpha;
  in.betaNet = net.beta;
  in.nicShare = share;
  if (hosts_ > 1 && algorithm != "hier") {
    const bool ringLike = algorithm == "ring" || algorithm == "chain";
    in.alpha = std::max(net.alpha, intra.alpha);
    in.beta = net.beta * (ringLike ? 1 : share);
  } else {
    in.alpha = haveIntra ? intra.alpha : net.alpha;
    in.beta = haveIntra ? intra.beta : net.beta;
  }
  (void)c;
  return in;
}

Estimate Planner::closedFormEstimate(Collective c, double bytes, const std::string& algorithm) const {
  Estimate e;
  e.algorithm = algorithm;
  e.simulated = false;
  const std::optional<Formula> f = closedForm(c, algorithm, formulaInputs(c, algorithm, bytes));
  if (!f) {
    e.error = format("no closed form for %s '%s' (and %d ranks are too many to simulate)", collectiveName(c),
                     algorithm.c_str(), nranks());
    return e;
  }
  e.seconds = f->seconds;
  e.critical.transfer[static_cast<int>(hosts_ > 1 ? ModelLink::kNetwork : ModelLink::kShm)] = f->seconds;
  return e;
}

std::vector<Estimate> Planner::rank(Collective c, double bytes, ternDataType_t dtype) const {
  std::vector<Estimate> out;
  for (const std::string& name : candidates(c)) out.push_back(estimate(c, bytes, name, dtype));
  std::stable_sort(out.begin(), out.end(), cheaperEstimate);
  return out;
}

int Planner::sizeBucket(double bytes) {
  if (bytes < 1) return -1;
  // Quarter octaves; the small epsilon keeps exact powers of two in their own bucket despite rounding in log2.
  return static_cast<int>(std::floor(4.0 * std::log2(bytes) + 1e-9));
}

double Planner::bucketBytes(int bucket) {
  if (bucket < 0) return 0;
  return std::floor(std::exp2(bucket / 4.0) + 1e-6);
}

std::shared_ptr<const Planner::Ranking> Planner::ranking(Collective c, double bytes, ternDataType_t dtype,
                                                         bool* fresh) const {
  const int bucket = sizeBucket(bytes);
  const auto key = std::make_tuple(static_cast<int>(c), bucket, static_cast<int>(dataTypeSize(dtype)));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = rankings_.find(key);
    if (it != rankings_.end()) {
      if (fresh != nullptr) *fresh = false;
      return it->second;
    }
  }
  auto r = std::make_shared<Ranking>();
  r->bucket = bucket;
  r->bytes = bucketBytes(bucket);
  r->ranked = rank(c, r->bytes, dtype);
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = rankings_.emplace(key, r);
  if (fresh != nullptr) *fresh = inserted;
  return it->second;
}

}  // namespace tern::planner
