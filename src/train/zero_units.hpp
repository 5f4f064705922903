// The pieces ZeRO is made of: memory that knows which account (parameters, gradients, optimizer) it is charged to,
// and the "unit" -- a group of parameters flattened into one buffer, padded to a multiple of the rank count and cut
// into equal shards, rank r owning elements [r*shard, (r+1)*shard). A unit is a gradient bucket in stages 1-2 and
// a layer in stage 3.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common.hpp"

namespace tern::train::detail {

// Current and peak bytes of one kind of memory.
struct MemoryAccount {
  size_t current = 0;
  size_t peak = 0;
  void add(size_t n) {
    current += n;
    if (current > peak) peak = current;
  }
  void sub(size_t n) { current -= n; }
  void resetPeak() { peak = current; }
};

// Zero-initialised bytes charged to an account while allocated.
class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  ~TrackedBuffer() { free(); }
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;

  void allocate(size_t bytes, MemoryAccount* account);
  void free();
  bool allocated() const { return data_ != nullptr; }
  std::byte* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<std::byte[]> data_;
  size_t bytes_ = 0;
  MemoryAccount* account_ = nullptr;
};

enum class GatherState { kReleased, kInFlight, kGathered };

struct ZeroParam {
  int layer = 0;
  size_t count = 0;
  int unit = -1;  // -1 for empty tensors
  size_t offset = 0;
  bool ready = false;
  std::vector<std::byte> init;  // initial values until finalize
};

struct ZeroUnit {
  std::vector<int> params;   // in flat order
  int layer = -1;            // stage 3
  size_t count = 0;          // real elements
  size_t padded = 0;         // count rounded up to a multiple of the rank count
  size_t shard = 0;          // padded / ranks
  TrackedBuffer full;        // parameters, padded (stages 1-2 always; stage 3 while gathered)
  TrackedBuffer shardParam;  // stage 3: this rank's parameter shard
  TrackedBuffer master;      // fp32 master shard (in stage 3 with fp32 parameters it is the shard itself)
  TrackedBuffer fullGrad;    // padded gradients: stage 1 always, stages 2-3 from first write until reduced
  TrackedBuffer gradShard;   // stages 2-3: reduced gradient shard
  std::unique_ptr<Optimizer> optimizer;
  int pending = 0;  // parameters whose gradient has not been reported this step
  PendingOp reduce;
  GatherState gather = GatherState::kReleased;
  PendingOp gatherOp;
};

// Groups parameter indices into units, each in backward (reverse registration) order. Stage 3: one unit per layer,
// layers in decreasing order. Stages 1-2: size-capped buckets (see planBuckets).
std::vector<std::vector<int>> planUnits(const std::vector<ZeroParam>& params, int stage, size_t elementSize,
                                        size_t bucketBytes);

}  // namespace tern::train::detail
