// DDP reducer. Gradients are copied into fp32 buckets as backward reports them; a bucket whose gradients are all
// in is all-reduced asynchronously at once, so its communication runs on the communicator's worker while backward
// computes the next layers. ternDdpFinish only waits for what is still in flight: that wait is the exposed
// communication.
//
// Buckets launch strictly in bucket order. Collectives are matched by issue order, so if rank A completed bucket 2
// before bucket 1 (e.g. a parameter unused on A) and launched it first while rank B did the opposite, the ranks
// would pair different buckets. Launching in order costs nothing when backward runs in the expected order.
#include <cstring>
#include <vector>

#include "bucket_plan.hpp"
#include "common.hpp"
#include "half.hpp"

namespace tern::train {
namespace {

using detail::Clock;
using detail::fail;
using detail::PendingOp;

struct Param {
  void* data;
  void* grad;
  size_t count;
  ternDataType_t dtype;
  int bucket = -1;  // -1: empty tensor, nothing to reduce
  size_t offset = 0;
  bool ready = false;    // reported in this micro-step
  bool touched = false;  // reported in this accumulation cycle (its slot holds a value)
};

struct Bucket {
  std::vector<int> params;
  size_t count = 0;
  std::vector<float> acc;      // fp32 accumulation; also what travels when the wire type is fp32
  std::vector<uint16_t> wire;  // fp16/bf16 copy that travels otherwise
  ternCompressor_t compressor = nullptr;
  int pending = 0;
  PendingOp op;

  Bucket() = default;
  Bucket(const Bucket&) = delete;
  Bucket& operator=(const Bucket&) = delete;
  ~Bucket() {
    op = PendingOp();  // the collective must be over before its compressor goes
    if (compressor != nullptr) ternCompressorDestroy(compressor);
  }
};

constexpr uint64_t kCompressorSeed = 0x7465726e64647000ull;  // same on every rank, distinct per bucket below

}  // namespace

struct Ddp::Impl {
  ternComm_t comm = nullptr;
  int nranks = 1;
  ternDdpConfig_t config;
  std::string compress;
  std::vector<Param> params;
  std::vector<std::unique_ptr<Bucket>> buckets;
  bool finalized = false;
  int microStep = 0;
  int nextLaunch = 0;
  int launchedEarly = 0;
  ternDdpStats_t stats{};

  ternDataType_t commDtype() const { return config.wireDtype; }

  void launch(Bucket& b) {
    void* buf = b.acc.data();
    if (commDtype() != ternFloat32) {
      detail::fromFloat(b.acc.data(), 1.0f, b.wire.data(), commDtype(), b.count);
      buf = b.wire.data();
    }
    ternRequest_t req = nullptr;
    if (b.compressor != nullptr) {
      b.op.start(ternAllReduceCompressedAsync(buf, buf, b.count, commDtype(), ternAvg, b.compressor, comm, &req), &req,
                 comm, "DDP bucket ternAllReduceCompressedAsync");
    } else {
      b.op.start(ternAllReduceAsync(buf, buf, b.count, commDtype(), ternAvg, comm, &req), &req, comm,
                 "DDP bucket ternAllReduceAsync");
    }
  }

  // Launches, in order, every bucket from nextLaunch on whose gradients are all in.
  void launchReady(bool early) {
    while (nextLaunch < static_cast<int>(buckets.size()) && buckets[nextLaunch]->pending == 0) {
      launch(*buckets[nextLaunch++]);
      if (early) ++launchedEarly;
    }
  }

  bool syncStep() const { return microStep + 1 >= config.accumulationSteps; }
};

Ddp::Ddp(ternComm_t comm, const ternDdpConfig_t* config) : impl_(std::make_unique<Impl>()) {
  if (comm == nullptr) fail(ternInvalidArgument, "Ddp: comm is NULL");
  impl_->comm = comm;
  detail::check(ternCommCount(comm, &impl_->nranks), comm, "Ddp: ternCommCount");
  ternDdpConfig_t c;
  ternDdpConfigDefault(&c);
  if (config != nullptr) c = *config;
  if (c.bucketBytes == 0) c.bucketBytes = detail::defaultBucketBytes();
  if (c.firstBucketBytes == 0) c.firstBucketBytes = std::min<size_t>(size_t{1} << 20, c.bucketBytes);
  if (c.accumulationSteps <= 0) fail(ternInvalidArgument, "Ddp: accumulationSteps must be >= 1");
  detail::floatTypeSize(c.wireDtype);
  impl_->compress = c.compress != nullptr ? c.compress : "";
  if (impl_->compress == "none") impl_->compress.clear();
  c.compress = nullptr;  // the string is kept in impl_->compress; the caller's may go away
  impl_->config = c;
}

Ddp::~Ddp() = default;

int Ddp::addParameter(void* data, void* grad, size_t count, ternDataType_t dtype) {
  Impl& s = *impl_;
  if (s.finalized) fail(ternInvalidUsage, "Ddp::addParameter after finalize");
  detail::floatTypeSize(dtype);
  if (count > 0 && (data == nullptr || grad == nullptr)) fail(ternInvalidArgument, "Ddp::addParameter: NULL buffer");
  s.params.push_back(Param{data, grad, count, dtype});
  return static_cast<int>(s.params.size()) - 1;
}

void Ddp::finalize() {
  Impl& s = *impl_;
  if (s.finalized) fail(ternInvalidUsage, "Ddp::finalize called twice");
  // Backward produces gradients in reverse registration (forward) order; buckets follow it.
  std::vector<int> order;
  std::vector<size_t> bytes;
  for (int i = static_cast<int>(s.params.size()) - 1; i >= 0; --i) {
    if (s.params[i].count == 0) continue;
    order.push_back(i);
    bytes.push_back(s.params[i].count * sizeof(float));
  }
  for (const auto& group : detail::planBuckets(bytes, s.config.firstBucketBytes, s.config.bucketBytes)) {
    auto b = std::make_unique<Bucket>();
    for (int k : group) {
      Param& p = s.params[order[k]];
      p.bucket = static_cast<int>(s.buckets.size());
      p.offset = b->count;
      b->count += p.count;
      b->params.push_back(order[k]);
    }
    b->acc.assign(b->count, 0.0f);
    if (s.commDtype() != ternFloat32) b->wire.assign(b->count, 0);
    b->pending = static_cast<int>(b->params.size());
    if (!s.compress.empty()) {
      detail::check(ternCompressorCreate(s.compress.c_str(), nullptr, b->count, s.commDtype(), &b->compressor), nullptr,
                    "Ddp: ternCompressorCreate");
      detail::check(ternCompressorSetSeed(b->compressor, kCompressorSeed + s.buckets.size()), nullptr,
                    "Ddp: ternCompressorSetSeed");
    }
    s.stats.gradientBytes += b->count * sizeof(float);
    s.buckets.push_back(std::move(b));
  }
  s.stats.buckets = static_cast<int>(s.buckets.size());

  if (s.config.broadcastParameters && s.nranks > 1) {
    // All broadcasts in flight at once: registration may have hundreds of small tensors.
    std::vector<PendingOp> ops(s.params.size());
    for (size_t i = 0; i < s.params.size(); ++i) {
      Param& p = s.params[i];
      if (p.count == 0) continue;
      ternRequest_t req = nullptr;
      ops[i].start(ternBroadcastAsync(p.data, p.data, p.count, p.dtype, 0, s.comm, &req), &req, s.comm,
                   "Ddp: broadcast of initial parameters");
    }
    for (auto& op : ops) op.wait();
  }
  s.finalized = true;
}

void Ddp::gradReady(int index) {
  Impl& s = *impl_;
  if (!s.finalized) fail(ternInvalidUsage, "Ddp::gradReady before finalize");
  if (index < 0 || index >= static_cast<int>(s.params.size())) {
    fail(ternInvalidArgument, "Ddp::gradReady: index %d out of range", index);
  }
  Param& p = s.params[index];
  if (p.ready) fail(ternInvalidUsage, "Ddp::gradReady: parameter %d reported twice in one micro-step", index);
  p.ready = true;
  if (p.bucket < 0) return;
  Bucket& b = *s.buckets[p.bucket];
  float* slot = b.acc.data() + p.offset;
  if (p.touched) {
    detail::addToFloat(p.grad, p.dtype, slot, p.count);
  } else {
    detail::toFloat(p.grad, p.dtype, slot, p.count);
    p.touched = true;
  }
  if (--b.pending == 0 && s.config.overlap && s.syncStep()) s.launchReady(true);
}

bool Ddp::finish() {
  Impl& s = *impl_;
  if (!s.finalized) fail(ternInvalidUsage, "Ddp::finish before finalize");
  if (!s.syncStep()) {
    for (Param& p : s.params) p.ready = false;
    for (auto& b : s.buckets) b->pending = static_cast<int>(b->params.size());
    ++s.microStep;
    return false;
  }
  // Parameters nobody reported (unused in this step's graph) contribute zero, so their bucket still completes.
  for (auto& b : s.buckets) {
    if (b->pending == 0) continue;
    for (int i : b->params) {
      Param& p = s.params[i];
      if (!p.touched) std::memset(b->acc.data() + p.offset, 0, p.count * sizeof(float));
      p.ready = p.touched = true;
    }
    b->pending = 0;
  }
  s.launchReady(false);

  auto t0 = Clock::now();
  for (auto& b : s.buckets) b->op.wait();
  double waited = detail::secondsBetween(t0, Clock::now());

  // ternAvg divided by the rank count; dividing by the micro-steps too makes the result the mean gradient of the
  // whole (global, accumulated) batch.
  const float scale = 1.0f / static_cast<float>(s.config.accumulationSteps);
  for (auto& b : s.buckets) {
    if (s.commDtype() != ternFloat32) detail::toFloat(b->wire.data(), s.commDtype(), b->acc.data(), b->count);
    for (int i : b->params) {
      Param& p = s.params[i];
      detail::fromFloat(b->acc.data() + p.offset, scale, p.grad, p.dtype, p.count);
    }
    b->pending = static_cast<int>(b->params.size());
  }
  for (Param& p : s.params) p.ready = p.touched = false;
  s.stats.lastWaitSeconds = waited;
  s.stats.totalWaitSeconds += waited;
  s.stats.bucketsLaunchedEarly = s.launchedEarly;
  s.stats.syncSteps++;
  s.nextLaunch = 0;
  s.launchedEarly = 0;
  s.microStep = 0;
  return true;
}

ternDdpStats_t Ddp::stats() const { return impl_->stats; }

}  // namespace tern::train
