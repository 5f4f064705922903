// ZeRO stages 1-3 over units (see zero_units.hpp).
//
//   stage 1: gradients all-reduced per bucket; each rank steps the optimizer on its shard of every bucket (its
//            master weights and optimizer state exist only for that shard), then the parameters are all-gathered.
//   stage 2: as 1, but each bucket's gradients are reduce-scattered, so a rank keeps only its gradient shard; the
//            full-size gradient lives from its first write until its reduce-scatter completes.
//   stage 3: as 2 with units = layers, and parameters too are kept as shards: gather(l) all-gathers the layer just
//            before use (while the layer that followed it in the previous step is prefetched) and release(l) frees
//            it again.
//
// Reductions are launched in unit order, for the reason given in ddp.cpp: collectives pair by issue order.
#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "common.hpp"
#include "half.hpp"
#include "zero_units.hpp"

namespace tern::train {
namespace {

using detail::Clock;
using detail::fail;
using detail::GatherState;
using detail::MemoryAccount;
using detail::ZeroParam;
using detail::ZeroUnit;

}  // namespace

struct Zero::Impl {
  ternComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
  ternZeroConfig_t config;
  size_t esize = 4;                         // bytes per parameter element
  MemoryAccount paramMem, gradMem, optMem;  // before units: their buffers report to these when freed
  std::vector<ZeroParam> params;
  std::vector<std::unique_ptr<ZeroUnit>> units;
  std::map<int, int> unitOfLayer;  // stage 3
  bool finalized = false;
  int nextLaunch = 0;
  size_t modelElements = 0;
  std::vector<int> trace, previousTrace;  // stage 3: layers in gather order, this step and the last
  std::vector<float> scratch;             // fp32 gradient shard
  double stepWait = 0;
  ternZeroStats_t stats{};

  bool stage3() const { return config.stage == 3; }
  ternDataType_t dtype() const { return config.paramDtype; }
  // fp32 parameters in stage 3: the master weights are the parameter shard itself (no second copy).
  bool masterIsShard() const { return stage3() && dtype() == ternFloat32; }

  ZeroParam& param(int index, const char* what) {
    if (!finalized) fail(ternInvalidUsage, "%s before finalize", what);
    if (index < 0 || index >= static_cast<int>(params.size())) {
      fail(ternInvalidArgument, "%s: parameter index %d out of range", what, index);
    }
    return params[index];
  }

  float* master(ZeroUnit& u) {
    return reinterpret_cast<float*>(masterIsShard() ? u.shardParam.data() : u.master.data());
  }

  std::byte* ownSlice(ZeroUnit& u, const detail::TrackedBuffer& buf) const {
    return buf.data() + static_cast<size_t>(rank) * u.shard * esize;
  }

  void ensureFullGrad(ZeroUnit& u) {
    if (!u.fullGrad.allocated()) u.fullGrad.allocate(u.padded * esize, &gradMem);
  }

  void launch(ZeroUnit& u) {
    ensureFullGrad(u);
    ternRequest_t req = nullptr;
    if (config.stage == 1) {
      u.reduce.start(ternAllReduceAsync(u.fullGrad.data(), u.fullGrad.data(), u.padded, dtype(), ternAvg, comm, &req),
                     &req, comm, "ZeRO gradient ternAllReduceAsync");
    } else {
      u.reduce.start(
          ternReduceScatterAsync(u.fullGrad.data(), u.gradShard.data(), u.shard, dtype(), ternAvg, comm, &req), &req,
          comm, "ZeRO gradient ternReduceScatterAsync");
    }
  }

  void launchReady() {
    while (nextLaunch < static_cast<int>(units.size()) && units[nextLaunch]->pending == 0) launch(*units[nextLaunch++]);
  }

  // Stages 2-3: frees the full-size gradients of units whose reduce-scatter has finished, bounding peak memory
  // to the buckets actually in flight.
  void reap() {
    if (config.stage == 1) return;
    for (int i = 0; i < nextLaunch; ++i) {
      ZeroUnit& u = *units[i];
      if (u.fullGrad.allocated() && u.reduce.test()) u.fullGrad.free();
    }
  }

  void startGather(ZeroUnit& u) {
    u.full.allocate(u.padded * esize, &paramMem);
    ternRequest_t req = nullptr;
    u.gatherOp.start(ternAllGatherAsync(u.shardParam.data(), u.full.data(), u.shard, dtype(), comm, &req), &req, comm,
                     "ZeRO-3 parameter ternAllGatherAsync");
    u.gather = GatherState::kInFlight;
  }

  void finishGather(ZeroUnit& u) {
    auto t0 = Clock::now();
    u.gatherOp.wait();
    stepWait += detail::secondsBetween(t0, Clock::now());
    u.gather = GatherState::kGathered;
  }

  void releaseUnit(ZeroUnit& u) {
    if (u.gather == GatherState::kInFlight) u.gatherOp.wait();
    u.full.free();
    u.gather = GatherState::kReleased;
  }

  // Stage 3 prefetch: the layer that came after position pos in the previous step's gather order.
  void prefetchAfter(size_t pos, int layer) {
    if (!config.prefetch) return;
    for (size_t j = pos + 1; j < previousTrace.size(); ++j) {
      if (previousTrace[j] == layer) continue;
      ZeroUnit& next = *units[unitOfLayer.at(previousTrace[j])];
      if (next.gather == GatherState::kReleased) startGather(next);
      return;
    }
  }

  void finalize();
  void step();
};

Zero::Zero(ternComm_t comm, const ternZeroConfig_t* config) : impl_(std::make_unique<Impl>()) {
  if (comm == nullptr) fail(ternInvalidArgument, "Zero: comm is NULL");
  Impl& s = *impl_;
  s.comm = comm;
  detail::check(ternCommCount(comm, &s.nranks), comm, "Zero: ternCommCount");
  detail::check(ternCommUserRank(comm, &s.rank), comm, "Zero: ternCommUserRank");
  ternZeroConfig_t c;
  ternZeroConfigDefault(&c);
  if (config != nullptr) c = *config;
  if (c.stage < 1 || c.stage > 3) fail(ternInvalidArgument, "Zero: stage %d, expected 1, 2 or 3", c.stage);
  if (c.bucketBytes == 0) c.bucketBytes = detail::defaultBucketBytes();
  s.esize = detail::floatTypeSize(c.paramDtype);
  Optimizer probe(c.optimizer, 0);  // validates the optimizer settings now rather than at finalize
  s.config = c;
}

Zero::~Zero() = default;

int Zero::addParameter(int layer, size_t count, const void* init) {
  Impl& s = *impl_;
  if (s.finalized) fail(ternInvalidUsage, "Zero::addParameter after finalize");
  if (layer < 0) fail(ternInvalidArgument, "Zero::addParameter: layer %d must be >= 0", layer);
  ZeroParam p;
  p.layer = layer;
  p.count = count;
  p.init.assign(count * s.esize, std::byte{0});
  if (init != nullptr && count > 0) std::memcpy(p.init.data(), init, count * s.esize);
  s.params.push_back(std::move(p));
  return static_cast<int>(s.params.size()) - 1;
}

void Zero::finalize() {
  Impl& s = *impl_;
  if (s.finalized) fail(ternInvalidUsage, "Zero::finalize called twice");
  s.finalize();
}

void Zero::Impl::finalize() {
  for (const auto& members : detail::planUnits(params, config.stage, esize, config.bucketBytes)) {
    auto u = std::make_unique<ZeroUnit>();
    u->params = members;
    u->layer = params[members.front()].layer;
    for (int i : members) {
      params[i].unit = static_cast<int>(units.size());
      params[i].offset = u->count;
      u->count += params[i].count;
    }
    u->padded = (u->count + nranks - 1) / nranks * nranks;
    u->shard = u->padded / nranks;
    u->pending = static_cast<int>(members.size());
    modelElements += u->count;
    if (stage3()) unitOfLayer[u->layer] = static_cast<int>(units.size());
    units.push_back(std::move(u));
  }

  // Initial values: assemble each unit, take rank 0's (blocking, one unit at a time so that stage 3 never holds
  // more than one full unit), keep what this rank needs.
  for (auto& up : units) {
    ZeroUnit& u = *up;
    detail::TrackedBuffer staging;
    detail::TrackedBuffer& full = stage3() ? staging : u.full;
    full.allocate(u.padded * esize, &paramMem);
    for (int i : u.params) {
      ZeroParam& p = params[i];
      std::memcpy(full.data() + p.offset * esize, p.init.data(), p.count * esize);
      std::vector<std::byte>().swap(p.init);
    }
    if (nranks > 1) {
      detail::check(ternBroadcast(full.data(), full.data(), u.padded, dtype(), 0, comm), comm,
                    "Zero: broadcast of initial parameters");
    }
    if (stage3()) {
      u.shardParam.allocate(u.shard * esize, &paramMem);
      std::memcpy(u.shardParam.data(), ownSlice(u, full), u.shard * esize);
    }
    if (!masterIsShard()) {
      u.master.allocate(u.shard * sizeof(float), &optMem);
      detail::toFloat(ownSlice(u, full), dtype(), reinterpret_cast<float*>(u.master.data()), u.shard);
    }
    if (config.stage == 1) {
      u.fullGrad.allocate(u.padded * esize, &gradMem);
    } else {
      u.gradShard.allocate(u.shard * esize, &gradMem);
    }
    u.optimizer = std::make_unique<Optimizer>(config.optimizer, u.shard);
    optMem.add(u.optimizer->stateBytes());
    scratch.resize(std::max(scratch.size(), u.shard));
  }
  // Peaks count from training on, not from the one-off assembly above.
  paramMem.resetPeak();
  gradMem.resetPeak();
  optMem.resetPeak();
  finalized = true;
}

void Zero::gather(int layer) {
  Impl& s = *impl_;
  if (!s.finalized) fail(ternInvalidUsage, "Zero::gather before finalize");
  if (!s.stage3()) return;
  auto it = s.unitOfLayer.find(layer);
  if (it == s.unitOfLayer.end()) return;  // a layer without parameters
  ZeroUnit& u = *s.units[it->second];
  size_t pos = s.trace.size();
  s.trace.push_back(layer);
  if (u.gather == GatherState::kReleased) s.startGather(u);
  // Issue the prefetch before waiting, so that it queues right behind this gather.
  s.prefetchAfter(pos, layer);
  if (u.gather == GatherState::kInFlight) s.finishGather(u);
  s.reap();
}

void Zero::release(int layer) {
  Impl& s = *impl_;
  if (!s.finalized) fail(ternInvalidUsage, "Zero::release before finalize");
  if (!s.stage3()) return;
  auto it = s.unitOfLayer.find(layer);
  if (it != s.unitOfLayer.end()) s.releaseUnit(*s.units[it->second]);
}

void* Zero::param(int index) {
  Impl& s = *impl_;
  ZeroParam& p = s.param(index, "Zero::param");
  if (p.unit < 0) return nullptr;
  ZeroUnit& u = *s.units[p.unit];
  if (s.stage3() && u.gather != GatherState::kGathered) {
    fail(ternInvalidUsage, "Zero::param(%d): layer %d is not gathered (call gather first)", index, p.layer);
  }
  return u.full.data() + p.offset * s.esize;
}

void* Zero::grad(int index) {
  Impl& s = *impl_;
  ZeroParam& p = s.param(index, "Zero::grad");
  if (p.unit < 0) return nullptr;
  ZeroUnit& u = *s.units[p.unit];
  if (u.reduce.active()) fail(ternInvalidUsage, "Zero::grad(%d): its gradients are already being reduced", index);
  s.ensureFullGrad(u);
  return u.fullGrad.data() + p.offset * s.esize;
}

void Zero::gradReady(int index) {
  Impl& s = *impl_;
  ZeroParam& p = s.param(index, "Zero::gradReady");
  if (p.ready) fail(ternInvalidUsage, "Zero::gradReady: parameter %d reported twice in one step", index);
  p.ready = true;
  if (p.unit < 0) return;
  ZeroUnit& u = *s.units[p.unit];
  s.ensureFullGrad(u);  // a gradient reported without being written is zero
  if (--u.pending == 0 && s.config.overlap) s.launchReady();
  s.reap();
}

void Zero::step() {
  Impl& s = *impl_;
  if (!s.finalized) fail(ternInvalidUsage, "Zero::step before finalize");
  s.step();
}

void Zero::Impl::step() {
  // Parameters not reported this step contribute zero gradients.
  for (auto& up : units) {
    ZeroUnit& u = *up;
    if (u.pending == 0) continue;
    ensureFullGrad(u);
    for (int i : u.params) {
      ZeroParam& p = params[i];
      if (!p.ready) std::memset(u.fullGrad.data() + p.offset * esize, 0, p.count * esize);
    }
    u.pending = 0;
  }
  launchReady();
  // Gathers still in flight or layers still gathered would hold pre-update values: drop them.
  for (auto& up : units) {
    if (up->gather != GatherState::kReleased) releaseUnit(*up);
  }

  auto t0 = Clock::now();
  for (auto& up : units) up->reduce.wait();
  stepWait += detail::secondsBetween(t0, Clock::now());

  for (auto& up : units) {
    ZeroUnit& u = *up;
    const std::byte* g = config.stage == 1 ? ownSlice(u, u.fullGrad) : u.gradShard.data();
    if (config.stage != 1) u.fullGrad.free();
    detail::toFloat(g, dtype(), scratch.data(), u.shard);
    u.optimizer->step(master(u), scratch.data());
    if (stage3()) {
      if (!masterIsShard()) detail::fromFloat(master(u), 1.0f, u.shardParam.data(), dtype(), u.shard);
    } else {
      detail::fromFloat(master(u), 1.0f, ownSlice(u, u.full), dtype(), u.shard);
    }
  }

  if (!stage3() && nranks > 1) {
    // Re-assemble the updated parameters: every unit's all-gather in flight at once.
    t0 = Clock::now();
    for (auto& up : units) {
      ZeroUnit& u = *up;
      ternRequest_t req = nullptr;
      u.gatherOp.start(ternAllGatherAsync(ownSlice(u, u.full), u.full.data(), u.shard, dtype(), comm, &req), &req, comm,
                       "ZeRO parameter ternAllGatherAsync");
    }
    for (auto& up : units) up->gatherOp.wait();
    stepWait += detail::secondsBetween(t0, Clock::now());
  }

  for (auto& p : params) p.ready = false;
  for (auto& up : units) up->pending = static_cast<int>(up->params.size());
  nextLaunch = 0;
  stats.lastWaitSeconds = stepWait;
  stats.totalWaitSeconds += stepWait;
  stats.steps++;
  stepWait = 0;
  if (stage3()) {
    previousTrace.swap(trace);
    trace.clear();
    // The first layer of the next forward can start moving now.
    if (config.prefetch && !previousTrace.empty()) {
      ZeroUnit& first = *units[unitOfLayer.at(previousTrace.front())];
      if (first.gather == GatherState::kReleased) startGather(first);
    }
  }
}

void Zero::setLr(float lr) {
  impl_->config.optimizer.lr = lr;
  for (auto& u : impl_->units) {
    if (u->optimizer) u->optimizer->setLr(lr);
  }
}

ternZeroMemory_t Zero::memory() const {
  const Impl& s = *impl_;
  ternZeroMemory_t m{};
  m.paramBytes = s.paramMem.current;
  m.paramPeakBytes = s.paramMem.peak;
  m.gradBytes = s.gradMem.current;
  m.gradPeakBytes = s.gradMem.peak;
  m.optimizerBytes = s.optMem.current;
  m.modelElements = s.modelElements;
  return m;
}

ternZeroStats_t Zero::stats() const { return impl_->stats; }

}  // namespace tern::train
