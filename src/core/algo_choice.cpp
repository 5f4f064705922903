#include "core/algo_choice.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "planner/calibration.hpp"
#include "planner/cluster_spec.hpp"
#include "planner/planner.hpp"
#include "planner/units.hpp"

namespace tern {

namespace {

// A planner for contexts that bring none: one per (host map, transport), shared by the process.
std::shared_ptr<const planner::Planner> defaultPlanner(const ChoiceContext& ctx) {
  std::vector<std::string> hostIds;
  for (int r = 0; r < ctx.nranks; ++r) {
    int h = 0;
    if (!ctx.hostOf.empty()) {
      h = r < static_cast<int>(ctx.hostOf.size()) ? ctx.hostOf[r] : 0;
    } else if (ctx.multiHost) {
      h = r;  // hosts unknown: assume the worst, every rank on its own
    }
    hostIds.push_back("host" + std::to_string(h));
  }
  const bool shm = !knobs().shmDisable;
  std::string key = shm ? "shm" : "tcp";
  for (const std::string& h : hostIds) key += "/" + h;
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const planner::Planner>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() > 64) cache.clear();
  auto p = makeCommPlanner(ctx.nranks, hostIds, shm);
  cache.emplace(key, p);
  return p;
}

const AlgorithmInfo* firstAllowed(Collective c, const AlgoOverride& override) {
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.collective == c && !override.excluded(c, a.name)) return &a;
  }
  return nullptr;
}

// The call's arguments scaled to another total size (the bucket's representative), for the direct path's estimate.
CollArgs atBytes(const CollArgs& args, int nranks, double bytes) {
  CollArgs a = planner::argsForBytes(args.coll, bytes, nranks, args.dtype);
  a.op = args.op;
  a.root = args.root;
  a.inPlace = args.inPlace;
  return a;
}

void logDecision(const CollArgs& args, const ChoiceContext& ctx, const planner::Planner::Ranking& ranking,
                 const AlgoOverride& override, const std::string& directName, double directTime,
                 const std::string& chosen) {
  std::string list;
  auto add = [&](const std::string& name, double seconds, const char* note) {
    list += format("%s%s %s%s", list.empty() ? "" : ", ", name.c_str(), planner::formatTime(seconds).c_str(), note);
  };
  for (const planner::Estimate& e : ranking.ranked) {
    if (!e.error.empty()) continue;
    add(e.algorithm, e.seconds, override.excluded(args.coll, e.algorithm) ? " (excluded)" : "");
  }
  if (!directName.empty() && directTime >= 0) add(directName, directTime, " (direct)");
  TERN_LOG(kInfo, kTune, ctx.rank, "%s %s%s of %s on %d ranks: %s -> %s", collectiveName(args.coll),
           planner::formatBytes(ranking.bytes).c_str(), ranking.bucket >= 0 ? " bucket" : "", dataTypeName(args.dtype),
           ctx.nranks, list.c_str(), chosen.c_str());
}

}  // namespace

std::shared_ptr<const planner::Planner> makeCommPlanner(int nranks, const std::vector<std::string>& hostIds,
                                                        bool shmTransport,
                                                        std::shared_ptr<const topo::JobTopology> job) {
  planner::PlannerConfig config;
  if (job == nullptr) {
    std::vector<std::string> ids = hostIds;
    ids.resize(nranks, ids.empty() ? std::string("host") : ids.back());
    job = std::make_shared<const topo::JobTopology>(planner::jobFromHostIds(ids));
  } else if (topo::placesGpus(*job)) {
    job = std::make_shared<const topo::JobTopology>(topo::withCpuRanks(*job));
  }
  config.job = std::move(job);
  config.intra = shmTransport ? planner::IntraTransport::kShm : planner::IntraTransport::kLoopback;
  config.params = planner::processCostParams();
  if (knobs().chunkBytes > 0) config.pipelineChunkBytes = static_cast<size_t>(knobs().chunkBytes);
  // TERN_RING_ORDER=rank: the naive flat order a topology-blind library uses (for comparisons, or when the host
  // grouping is wrong); the model then prices the rings that will really run.
  if (knobs().ringOrderByRank) {
    config.ringOrder.resize(static_cast<size_t>(nranks));
    for (int r = 0; r < nranks; ++r) config.ringOrder[static_cast<size_t>(r)] = r;
  }
  return std::make_shared<const planner::Planner>(std::move(config));
}

std::shared_ptr<const planner::Planner> makeDevicePlanner(std::shared_ptr<const topo::JobTopology> job) {
  if (!job || !topo::placesGpus(*job)) return nullptr;
  planner::PlannerConfig config;
  config.job = std::move(job);
  config.intra = planner::IntraTransport::kTopology;
  config.params = planner::processCostParams();
  if (knobs().chunkBytes > 0) config.pipelineChunkBytes = static_cast<size_t>(knobs().chunkBytes);
  return std::make_shared<const planner::Planner>(std::move(config));
}

namespace {

// A forced shared-memory entry: the direct path runs it, or the call fails naming why.
Choice forcedSharedMemory(const CollArgs& args, const ChoiceContext& ctx, const std::string& forced,
                          const DirectOption& direct) {
  Choice choice;
  choice.name = forced;
  choice.forced = true;
  choice.direct = true;
  if (ctx.nranks <= 1) return choice;  // one rank copies; nothing to check
  if (direct.name.empty()) {
    throwError(ternInvalidUsage,
               "TERN_ALGO=%s (%s) needs every rank of the communicator on one host with the shared-memory transport "
               "(not TERN_SHM_DISABLE, TERN_TRANSPORT=ucx/ibverbs or an in-process communicator)",
               forced.c_str(), collectiveName(args.coll));
  }
  if (direct.name != forced) {
    throwError(ternInvalidUsage, "TERN_ALGO=%s (%s): the shared-memory path would run %s instead", forced.c_str(),
               collectiveName(args.coll), direct.name.c_str());
  }
  return choice;
}

// The schedule algorithm for args, whatever the direct path does: a forced schedule entry, else the cost model's.
Choice chooseSchedule(const CollArgs& args, const ChoiceContext& ctx, const AlgoOverride& override,
                      const DirectOption& direct, bool ignoreForcedSharedMemory);

}  // namespace

Choice chooseWithDirect(const CollArgs& args, const ChoiceContext& ctx, const AlgoOverride& override,
                        const DirectOption& direct) {
  return chooseSchedule(args, ctx, override, direct, false);
}

namespace {

Choice chooseSchedule(const CollArgs& args, const ChoiceContext& ctx, const AlgoOverride& override,
                      const DirectOption& direct, bool ignoreForcedSharedMemory) {
  Choice choice;
  const std::string forced = override.forced(args.coll);
  if (!forced.empty()) {
    const AlgorithmInfo* entry = findEntry(args.coll, forced);
    if (entry->family == AlgorithmFamily::kSchedule) {
      choice.info = entry;
      choice.name = forced;
      choice.forced = true;
      return choice;
    }
    if (!ignoreForcedSharedMemory) return forcedSharedMemory(args, ctx, forced, direct);
  }
  const AlgorithmInfo* fallback = firstAllowed(args.coll, override);
  if (fallback == nullptr) {
    throwError(ternInvalidUsage, "no algorithm available for %s (all excluded by TERN_ALGO?)",
               collectiveName(args.coll));
  }
  choice.info = fallback;
  choice.name = fallback->name;
  const bool priced = ctx.nranks > 1 && args.coll != Collective::kAlltoAllv && args.coll != Collective::kPointToPoint &&
                      args.coll != Collective::kCount;
  if (!priced) {
    // Alltoallv cannot be priced from a count; its shared-memory form, where it applies, moves every block once.
    if (args.coll == Collective::kAlltoAllv && !direct.name.empty() && direct.predictSeconds) {
      const double s = direct.predictSeconds(args);
      if (s >= 0) {
        choice.info = nullptr;
        choice.name = direct.name;
        choice.direct = true;
        choice.predictedSeconds = s;
      }
    }
    return choice;
  }

  std::shared_ptr<const planner::Planner> plan = ctx.planner ? ctx.planner : defaultPlanner(ctx);
  bool fresh = false;
  const auto ranking = plan->ranking(args.coll, planner::bytesOfArgs(args, ctx.nranks), args.dtype, &fresh);
  for (const planner::Estimate& e : ranking->ranked) {
    if (!e.error.empty() || e.seconds < 0 || override.excluded(args.coll, e.algorithm)) continue;
    const AlgorithmInfo* info = findAlgorithm(args.coll, e.algorithm);
    if (info == nullptr) continue;  // the planner's own direct-path estimate: the communicator brings its own
    choice.info = info;
    choice.name = e.algorithm;
    choice.predictedSeconds = e.seconds;
    break;
  }
  // The direct path competes at the same representative size, so the comparison is the same on every rank.
  double directTime = -1;
  if (!direct.name.empty() && direct.predictSeconds) {
    ChoiceContext withPlanner = ctx;
    withPlanner.planner = plan;
    directTime = directSeconds(atBytes(args, ctx.nranks, ranking->bytes), withPlanner, direct);
    const bool comparable = plan->shmSchedulesCalibrated();
    if (directTime >= 0 && (!comparable || choice.predictedSeconds < 0 || directTime <= choice.predictedSeconds)) {
      choice.info = nullptr;
      choice.name = direct.name;
      choice.direct = true;
      choice.predictedSeconds = directTime;
    }
  }
  if (fresh) logDecision(args, ctx, *ranking, override, direct.name, directTime, choice.name);
  return choice;
}

}  // namespace

const AlgorithmInfo& chooseAlgorithm(const CollArgs& args, const ChoiceContext& ctx, const AlgoOverride& override) {
  return *chooseSchedule(args, ctx, override, DirectOption{}, true).info;
}

double predictSeconds(const CollArgs& args, const ChoiceContext& ctx, const std::string& algorithm) {
  if (ctx.nranks <= 1) return 0;
  if (findAlgorithm(args.coll, algorithm) == nullptr) return -1;
  std::shared_ptr<const planner::Planner> plan = ctx.planner ? ctx.planner : defaultPlanner(ctx);
  const planner::Estimate e = plan->estimate(args.coll, planner::bytesOfArgs(args, ctx.nranks), algorithm, args.dtype);
  return e.error.empty() ? e.seconds : -1;
}

double directSeconds(const CollArgs& args, const ChoiceContext& ctx, const DirectOption& direct) {
  if (direct.name.empty() || !direct.predictSeconds) return -1;
  const double own = direct.predictSeconds(args);
  if (own < 0) return own;  // the transport says it does not apply
  std::shared_ptr<const planner::Planner> plan = ctx.planner ? ctx.planner : defaultPlanner(ctx);
  const double calibrated = plan->calibratedDirectSeconds(args.coll, planner::bytesOfArgs(args, ctx.nranks));
  return calibrated >= 0 ? calibrated : own;
}

double predictChoiceSeconds(const CollArgs& args, const ChoiceContext& ctx, const Choice& choice,
                            const DirectOption& direct) {
  const double s = choice.direct ? directSeconds(args, ctx, direct) : predictSeconds(args, ctx, choice.name);
  return s > 0 ? s : 0;
}

}  // namespace tern
