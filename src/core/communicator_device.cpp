// The communicator's device path: the engines of stream-ordered calls (tern_cuda.h), made on first use.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "compress/codec_factory.hpp"
#include "core/communicator.hpp"
#include "core/device_compressed_calls.hpp"
#include "core/device_engine_choice.hpp"
#include "core/device_streams.hpp"
#include "core/nccl_device_engine.hpp"
#include "core/operation_pool.hpp"
#include "core/staged_device_calls.hpp"
#include "planner/units.hpp"

namespace tern {

void Communicator::recordAsyncFailure(ternResult_t code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (failed_) return;
  }
  fail(code, message);
}

StagedDeviceCalls& Communicator::stagedDeviceCalls(DeviceStreams& streams) {
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (!staged_) staged_ = std::make_unique<StagedDeviceCalls>(streams);
  return *staged_;
}

DeviceCompressedCalls& Communicator::deviceCompressedCalls(DeviceStreams& streams, compress::DeviceCodecs& codecs) {
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (!deviceCompressed_) deviceCompressed_ = std::make_unique<DeviceCompressedCalls>(streams, codecs);
  return *deviceCompressed_;
}

Compressor* Communicator::deviceCompressor(const CollArgs& args, void* recvbuff, bool onDevice) {
  if (!onDevice) {
    throwError(ternInvalidUsage,
               "rank %d: stream-ordered allreduce of %zu %s: the ranks agreed to compress calls of this shape on "
               "the device, and this call's buffers are not device memory (keep one kind of buffer per shape, or "
               "TERN_COMPRESS off)",
               rank_, args.count, dataTypeName(args.dtype));
  }
  return defaultCompressor(recvbuff, args.count, args.dtype);
}

namespace {

// A rank's vote on a stream-ordered call's plan (Communicator::devicePlan).
enum DeviceVote : uint8_t {
  kWouldCompress = 1,      // it has device codecs and device buffers, and compression pays by its model
  kWouldCompressHier = 2,  // ... in the hierarchical form
  kPrefersNccl = 4,        // its model prices NCCL below staging
  kModelSettled = 8,       // its model will not change any more
};

}  // namespace

Communicator::DevicePlan Communicator::devicePlan(const CollArgs& args, bool compressible, bool codecsOnDevice,
                                                  bool ncclUp) {
  // The engine is the model's to pick where NCCL is up, TERN_DEVICE_ENGINE leaves it open, the job places GPUs
  // (elsewhere NCCL is unpriced and runs: NVIDIA's library on its own hardware is the prior), and the call has a
  // catalogue entry (batches of sends and receives, alltoallv included, run where NCCL runs).
  const bool enginePriced = ncclUp && knobs().deviceEngine == "auto" && currentDevicePlanner() != nullptr &&
                            args.coll != Collective::kPointToPoint && args.coll != Collective::kAlltoAllv;
  if (!compressible && !enginePriced) {
    // Every rank knows this alike, from what its peers know too: no vote, and nothing kept (a point-to-point batch
    // is made by the ranks it involves only, so keeping its plans would leave the ranks with different tables).
    DevicePlan plan;
    plan.nccl = ncclUp;
    return plan;
  }
  // Only shapes that vote are kept: every rank makes the same calls of them, so every rank's table holds the same
  // entries and reaches its limit at the same call. compressible and ncclUp are in the key, as they decide the
  // plan: a TERN_COMPRESS sum and a max of the same shape are planned apart.
  std::lock_guard<std::mutex> lock(devicePlanMutex_);
  const DevicePlanKey key{
      static_cast<int>(args.coll), args.count, static_cast<int>(args.dtype), args.inPlace, compressible, ncclUp};
  auto it = devicePlans_.find(key);
  if (it != devicePlans_.end()) {
    AgreedDevicePlan& known = it->second;
    ++known.calls;
    if (known.final || known.calls < known.voteAgain) return known.plan;
  }
  uint8_t mine = modelSettled_ ? kModelSettled : 0;
  if (compressible && codecsOnDevice && compressionPays(args, options_.compress, true)) {
    mine |= kWouldCompress;
    if (compressHierFor(args, *compress::makeCodec(options_.compress), true)) mine |= kWouldCompressHier;
  }
  if (enginePriced && ncclPreferred(args)) mine |= kPrefersNccl;
  std::vector<uint8_t> all(static_cast<size_t>(nranks_));
  runBlocking(newOperation(Collective::kAllGather, &mine, all.data(), 1, ternUint8, ternSum, 0));
  auto every = [&all](uint8_t bit) {
    return std::all_of(all.begin(), all.end(), [bit](uint8_t v) { return (v & bit) != 0; });
  };
  AgreedDevicePlan agreed;
  agreed.plan.compress = every(kWouldCompress);
  agreed.plan.hierarchical = agreed.plan.compress && every(kWouldCompressHier);
  agreed.plan.nccl = ncclUp && (!enginePriced || (all[0] & kPrefersNccl) != 0);
  agreed.final = every(kModelSettled);
  agreed.calls = it != devicePlans_.end() ? it->second.calls : 1;
  agreed.voteAgain = std::max<uint64_t>(16, 2 * agreed.calls);
  TERN_LOG(
      kInfo, kTune, rank_, "stream-ordered %s count %zu %s%s, call %llu: %s%s", collectiveName(args.coll), args.count,
      dataTypeName(args.dtype), args.inPlace ? " in place" : "", static_cast<unsigned long long>(agreed.calls),
      agreed.plan.compress ? (agreed.plan.hierarchical ? "compressed with the codecs on the device, hierarchical form"
                                                       : "compressed with the codecs on the device")
                           : (agreed.plan.nccl ? "nccl" : "staged"),
      agreed.final ? "" : " (voted again later: a rank's model is still learning the network)");
  if (it != devicePlans_.end()) {
    it->second = agreed;
  } else {
    if (devicePlans_.size() >= kDevicePlanEntries) devicePlans_.clear();  // alike on every rank (above)
    devicePlans_.emplace(key, agreed);
  }
  return agreed.plan;
}

namespace {

// What each rank contributes to the engine decision: whether it can use NCCL, and rank 0's NCCL unique id.
struct EngineVote {
  uint8_t canUseNccl;
  uint8_t wantsNccl;  // TERN_DEVICE_ENGINE=nccl: not having it is an error, not a fallback
  uint8_t hasCodecs;  // the codecs run on the device (DeviceStreams::hasCodecs)
  uint8_t pad[5];
  NcclUniqueId id;
};

}  // namespace

NcclDeviceEngine* Communicator::ncclEngine(const DeviceStreams& streams) {
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (deviceEngineDecided_) return nccl_.get();
  deviceEngineDecided_ = true;
  const std::string mode = knobs().deviceEngine;
  std::string why = mode == "staged" ? "TERN_DEVICE_ENGINE=staged" : "the streams are not a GPU's (a test double)";
  const NcclLibrary* lib = mode == "staged" || !streams.runsNccl() ? nullptr : NcclLibrary::load(&why);
  EngineVote mine{};
  mine.canUseNccl = lib != nullptr ? 1 : 0;
  mine.wantsNccl = mode == "nccl" ? 1 : 0;
  mine.hasCodecs = streams.hasCodecs() ? 1 : 0;
  if (lib != nullptr && rank_ == 0 && lib->getUniqueId(&mine.id) != 0) {
    mine.canUseNccl = 0;
    why = "ncclGetUniqueId failed";
  }
  // Every rank decides alike: one allgather, in call order like any other call.
  std::vector<EngineVote> all(static_cast<size_t>(nranks_));
  runBlocking(newOperation(Collective::kAllGather, &mine, all.data(), sizeof(EngineVote), ternUint8, ternSum, 0));
  int without = -1;
  bool wanted = false;
  bool codecs = true;
  for (int r = 0; r < nranks_; ++r) {
    if (all[r].canUseNccl == 0 && without < 0) without = r;
    wanted = wanted || all[r].wantsNccl != 0;
    codecs = codecs && all[r].hasCodecs != 0;
  }
  deviceCodecsEverywhere_ = codecs;
  if (without >= 0) {
    if (wanted) {
      throwError(ternInvalidUsage, "rank %d: TERN_DEVICE_ENGINE=nccl, but rank %d cannot use NCCL%s%s", rank_, without,
                 without == rank_ ? ": " : "", without == rank_ ? why.c_str() : "");
    }
    TERN_LOG(kInfo, kInit, rank_, "device engine: staged through pinned memory (rank %d: no NCCL%s%s)", without,
             without == rank_ ? ": " : "", without == rank_ ? why.c_str() : "");
    return nullptr;
  }
  // ncclCommInitRank blocks until every rank has joined, with no deadline of its own: it runs on a helper thread
  // that this call waits for at most the communicator's timeout (a rank lost meanwhile leaves that thread behind).
  const NcclUniqueId id = all[0].id;
  auto made = std::make_shared<std::promise<std::pair<int, void*>>>();
  std::future<std::pair<int, void*>> result = made->get_future();
  std::thread([lib, id, made, n = nranks_, r = rank_] {
    void* comm = nullptr;
    const int rc = lib->commInitRank(&comm, n, id, r);
    made->set_value({rc, comm});
  }).detach();
  if (result.wait_for(std::chrono::milliseconds(options_.timeoutMs)) != std::future_status::ready) {
    throwError(ternTimeout, "rank %d: ncclCommInitRank (NCCL %d from %s) did not finish within TERN_TIMEOUT (%d ms)",
               rank_, lib->version, lib->path.c_str(), options_.timeoutMs);
  }
  const auto [rc, comm] = result.get();
  if (rc != 0) {
    throwError(static_cast<ternResult_t>(rc), "rank %d: ncclCommInitRank (NCCL %d from %s) failed: %s", rank_,
               lib->version, lib->path.c_str(), lib->getErrorString(rc));
  }
  nccl_ = std::make_unique<NcclDeviceEngine>(*lib, comm, rank_, nranks_);
  TERN_LOG(kInfo, kInit, rank_, "device engine: NCCL %d from %s", lib->version, lib->path.c_str());
  return nccl_.get();
}

bool Communicator::ncclPreferred(const CollArgs& args) {
  const Choice host = choose(args);
  const std::vector<DeviceEngineEstimate> ranked =
      rankDeviceEngines(args, nranks_, *job_, currentDevicePlanner().get(), host.name, predictSeconds(args, host));
  const DeviceEngineEstimate& nccl = ranked[0].engine == "nccl" ? ranked[0] : ranked[1];
  const DeviceEngineEstimate& staged = ranked[0].engine == "staged" ? ranked[0] : ranked[1];
  const bool prefersNccl = nccl.seconds < 0 || ranked[0].engine == "nccl";
  auto describe = [](const DeviceEngineEstimate& e) {
    return e.seconds < 0
               ? e.engine + " not priced (no rank's GPU is in the job topology)"
               : format("%s (%s) %s", e.engine.c_str(), e.algorithm.c_str(), planner::formatTime(e.seconds).c_str());
  };
  TERN_LOG(kInfo, kTune, rank_, "stream-ordered %s count %zu %s on device buffers: %s, %s -> %s",
           collectiveName(args.coll), args.count, dataTypeName(args.dtype), describe(nccl).c_str(),
           describe(staged).c_str(), prefersNccl ? "nccl" : "staged");
  return prefersNccl;
}

ternResult_t Communicator::deviceAsyncError() {
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (!nccl_) return ternSuccess;
  std::string message;
  const int r = nccl_->asyncError(&message);
  if (r == 0) return ternSuccess;
  {
    std::lock_guard<std::mutex> errorLock(errorMutex_);
    if (lastError_.empty()) lastError_ = format("rank %d: %s", rank_, message.c_str());
  }
  return static_cast<ternResult_t>(r);
}

void Communicator::abortDeviceEngines() {
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (nccl_) nccl_->abort();
}

}  // namespace tern
