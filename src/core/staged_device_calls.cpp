#include "core/staged_device_calls.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/error.hpp"
#include "base/log.hpp"
#include "core/communicator.hpp"
#include "exec/collective.hpp"

namespace tern {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kMinBlockBytes = size_t{64} << 10;

size_t alignUp(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

size_t blockSizeFor(size_t bytes) {
  size_t b = kMinBlockBytes;
  while (b < bytes) b *= 2;
  return b;
}

// One buffer of the call as the caller passed it, and whether the stream must copy it in before or out after.
struct Use {
  const char* p;
  size_t bytes;
  bool copyIn;
  bool copyOut;
};

void openGate(void* arg) {
  auto* gate = static_cast<std::shared_ptr<OperationGate>*>(arg);
  (*gate)->open();
  delete gate;
}

}  // namespace

StagedDeviceCalls::StagedDeviceCalls(DeviceStreams& streams) : streams_(streams) {
  flag_ = static_cast<uint32_t*>(streams_.allocPinned(kAlign));
  __atomic_store_n(flag_, 0u, __ATOMIC_RELEASE);
}

StagedDeviceCalls::~StagedDeviceCalls() {
  // Every call has finished (the communicator's worker stopped first), so its stream is past the flag wait; give the
  // copies back a bounded time before freeing the memory they may still read.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (Block& b : blocks_) {
    if (b.marker == 0) continue;
    while (!streams_.markerReached(b.marker) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    streams_.releaseMarker(b.marker);
  }
  for (Block& b : blocks_) streams_.freePinned(b.data);
  streams_.freePinned(flag_);
}

void StagedDeviceCalls::reclaim() {
  for (Block& b : blocks_) {
    if (b.busy && b.marker != 0 && streams_.markerReached(b.marker)) {
      streams_.releaseMarker(b.marker);
      b.marker = 0;
      b.busy = false;
    }
  }
  // Idle blocks are kept up to the most staging the calls ever had in flight at once (a training loop's steady
  // pattern then allocates nothing), the largest first; beyond that they go back.
  std::stable_sort(blocks_.begin(), blocks_.end(), [](const Block& a, const Block& b) { return a.bytes > b.bytes; });
  size_t kept = 0;
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    if (!it->busy && kept + it->bytes > peakBusyBytes_) {
      streams_.freePinned(it->data);
      it = blocks_.erase(it);
    } else {
      if (!it->busy) kept += it->bytes;
      ++it;
    }
  }
}

StagedDeviceCalls::Block& StagedDeviceCalls::acquire(size_t bytes) {
  Block* best = nullptr;
  for (Block& b : blocks_) {
    if (!b.busy && b.bytes >= bytes && (best == nullptr || b.bytes < best->bytes)) best = &b;
  }
  if (best == nullptr) {
    Block fresh;
    fresh.bytes = blockSizeFor(bytes);
    fresh.data = static_cast<char*>(streams_.allocPinned(fresh.bytes));
    blocks_.push_back(fresh);
    best = &blocks_.back();
  }
  best->busy = true;
  size_t busy = 0;
  for (const Block& b : blocks_) busy += b.busy ? b.bytes : 0;
  peakBusyBytes_ = std::max(peakBusyBytes_, busy);
  return *best;
}

char* StagedDeviceCalls::stagedFor(const std::vector<Region>& regions, const void* user) {
  const char* p = static_cast<const char*>(user);
  for (const Region& r : regions) {
    if (p >= r.user && p <= r.user + r.bytes) return r.staged + (p - r.user);
  }
  return const_cast<char*>(p);  // host memory: used in place
}

void StagedDeviceCalls::launch(Communicator& comm, const std::shared_ptr<Operation>& call, void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  reclaim();
  // An operation of its own rather than the caller's, which may come from the API's per-thread pool: the pool
  // reuses an operation once nobody else holds it, and nobody waits on a stream-ordered one, so the worker's last
  // touches and the next call's reuse would be ordered only by the reference count.
  auto op = std::make_shared<Operation>();
  op->args = call->args;
  op->input = call->input;
  op->output = call->output;
  op->transfers = call->transfers;
  op->compressor = call->compressor;
  op->implicitCompression = call->implicitCompression;
  op->feedbackKey = call->feedbackKey;
  op->recordsAlgorithm = call->recordsAlgorithm;

  // What the call reads before it and writes by it. Broadcast reads the root's input only, Reduce writes the root's
  // output only; the others' buffers still get staging (a schedule may use them) but no copies.
  const CollArgs& a = op->args;
  std::vector<Use> uses;
  if (a.coll == Collective::kPointToPoint) {
    for (const UserTransfer& t : op->transfers) {
      if (t.bytes > 0) uses.push_back({static_cast<const char*>(t.data), t.bytes, t.isSend, !t.isSend});
    }
  } else {
    const int n = comm.size(), me = comm.rank();
    const size_t in = inputBytes(a, n), out = outputBytes(a, n);
    if (in > 0 && op->input != nullptr) {
      uses.push_back(
          {static_cast<const char*>(op->input), in, !(a.coll == Collective::kBroadcast && me != a.root), false});
    }
    // Alltoallv writes its blocks only, not the gaps between them, which must keep what the device holds: its
    // output is staged in as well.
    if (out > 0 && op->output != nullptr) {
      uses.push_back({static_cast<const char*>(op->output), out, a.coll == Collective::kAlltoAllv,
                      !(a.coll == Collective::kReduce && me != a.root)});
    }
  }

  // The device buffers, merged where they overlap (in place), each a region of one staging block.
  std::vector<Region> regions;
  std::vector<Use> device;
  for (const Use& u : uses) {
    if (streams_.isDeviceMemory(u.p)) device.push_back(u);
  }
  std::sort(device.begin(), device.end(), [](const Use& x, const Use& y) { return x.p < y.p; });
  for (const Use& u : device) {
    if (!regions.empty() && u.p <= regions.back().user + regions.back().bytes) {
      Region& r = regions.back();
      r.bytes = std::max<size_t>(r.bytes, static_cast<size_t>(u.p + u.bytes - r.user));
    } else {
      regions.push_back({u.p, u.bytes, nullptr});
    }
  }
  Block* block = nullptr;
  if (!regions.empty()) {
    size_t total = 0;
    for (const Region& r : regions) total += alignUp(r.bytes);
    block = &acquire(total);
    size_t offset = 0;
    for (Region& r : regions) {
      r.staged = block->data + offset;
      offset += alignUp(r.bytes);
    }
  }

  // On the stream: the inputs into staging, then the host may start the operation.
  for (const Use& u : device) {
    if (u.copyIn) streams_.copyAsync(stagedFor(regions, u.p), u.p, u.bytes, stream);
  }
  if (op->feedbackKey == nullptr) op->feedbackKey = op->output;
  op->input = stagedFor(regions, op->input);
  op->output = stagedFor(regions, op->output);
  for (UserTransfer& t : op->transfers) t.data = stagedFor(regions, t.data);
  op->gate = std::make_shared<OperationGate>();
  streams_.callHostAsync(stream, openGate, new std::shared_ptr<OperationGate>(op->gate));

  const uint32_t number = issued_ + 1;
  uint32_t* flag = flag_;
  Communicator* owner = &comm;
  op->onFinish = [flag, number, owner](ternResult_t result, const std::string& message) {
    if (result != ternSuccess) owner->recordAsyncFailure(result, message);
    __atomic_store_n(flag, number, __ATOMIC_RELEASE);  // calls finish in queue order, so the flag only grows
  };
  try {
    comm.submit(op, false);
  } catch (...) {
    if (block != nullptr) block->marker = streams_.recordMarker(stream);
    throw;
  }
  issued_ = number;

  // The stream goes on once the operation has finished; then the results come back.
  streams_.waitFlagAsync(stream, flag_, number);
  for (const Use& u : device) {
    if (u.copyOut) streams_.copyAsync(const_cast<char*>(u.p), stagedFor(regions, u.p), u.bytes, stream);
  }
  if (block != nullptr) block->marker = streams_.recordMarker(stream);
}

}  // namespace tern
