// CUDA kernels of the Top-K codec, following the CPU's definition (topk_kernels.hpp) exactly:
//  - threshold: exact = radix select of the k-th largest key over the chunk (3 histogram passes, bits 30-21,
//    20-10, 9-0, each followed by a one-thread pick of the bin); sampled = the same radix select over the keys of
//    the sampled positions (same RNG as the CPU) gives T, the elements with key >= T are counted, and when more
//    than k are, the exact radix select over the chunk replaces T (the CPU's rule, topk_codec.cpp: the k largest
//    candidates with ties to the lower index are the exact selection's set, since its k-th key is then >= T).
//    The refinement's kernels are always launched and return at once when it is not needed, so the host never
//    waits for the count;
//  - selection in index order without a sequential pass: element i is kept when it is a candidate (key > T, or
//    key == T with fewer than tieBudget ties before it) and G(i) + min(E(i), tieBudget) < cap, where G and E count
//    the greater and equal keys before i. That count is also i's position in the payload, so a per-tile count, a
//    scan over tiles and a per-tile scan give every kept element its slot: indices come out sorted.
#include "compress/cuda/device_common.cuh"
#include "compress/cuda/kernels.cuh"
#include "compress/payload_layout.hpp"
#include "compress/topk_codec.hpp"
#include "compress/topk_kernels.hpp"

namespace tern::compress::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 16;  // consecutive elements per thread in the selection kernels
constexpr size_t kTile = static_cast<size_t>(kThreads) * kItems;
constexpr int kScanThreads = 1024;
constexpr int kBins = 2048;

struct Digit {
  int shift;
  int width;
};
constexpr Digit kDigits[3] = {{21, 10}, {10, 11}, {0, 10}};

// Radix-select and selection state, in the workspace.
struct TopkState {
  uint32_t prefix;
  uint32_t prefixMask;
  uint32_t remaining;  // rank of the target among keys matching prefix
  uint32_t greater;    // keys above the prefix's bin so far
  uint32_t threshold;
  uint32_t tieBudget;
  uint32_t cap;
  uint32_t count;
  uint32_t sampledThreshold;  // T of the sample, kept while the refinement's radix select reuses prefix
  uint32_t skip;              // nonzero: the radix-select kernels return at once (no refinement needed)
};

struct Workspace {
  TopkState* state;
  uint32_t* hist;         // kBins
  uint32_t* tileCounts;   // 2 per tile: greater, equal
  uint32_t* tileOffsets;  // 2 per tile: exclusive prefix
  uint32_t* sampleKeys;   // plan.sampleSize
};

size_t align16(size_t b) { return (b + 15) & ~size_t{15}; }
TERN_HD size_t tiles(size_t n) { return (n + kTile - 1) / kTile; }

Workspace carve(void* base, size_t n, size_t sampleSize) {
  auto* p = static_cast<uint8_t*>(base);
  Workspace w;
  w.state = reinterpret_cast<TopkState*>(p);
  p += align16(sizeof(TopkState));
  w.hist = reinterpret_cast<uint32_t*>(p);
  p += align16(sizeof(uint32_t) * kBins);
  w.tileCounts = reinterpret_cast<uint32_t*>(p);
  p += align16(sizeof(uint32_t) * 2 * tiles(n));
  w.tileOffsets = reinterpret_cast<uint32_t*>(p);
  p += align16(sizeof(uint32_t) * 2 * tiles(n));
  w.sampleKeys = reinterpret_cast<uint32_t*>(p);
  p += align16(sizeof(uint32_t) * sampleSize);
  return w;
}

// ---- key sources --------------------------------------------------------------------------------------------------

// Keys of the chunk's v; with kStore also stores v into the residual (first pass of an error-feedback encode).
template <class In, TopkSource kSource, bool kStore>
struct ElementKeys {
  const typename In::Elem* x;
  float* residual;
  __device__ uint32_t operator()(size_t i) const {
    const float v = topkLoad<In, kSource>(x, residual, i);
    if (kStore) residual[i] = v;
    return absKey(v);
  }
};

struct ArrayKeys {
  const uint32_t* keys;
  __device__ uint32_t operator()(size_t i) const { return keys[i]; }
};

// Block-wide exclusive scan of a pair of counts (kThreads threads); returns the block totals in *total.
__device__ __forceinline__ uint2 blockExclusiveScan(uint2 v, uint2* total) {
  __shared__ uint2 warpSums[kThreads / kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  uint2 inc = v;
  for (int d = 1; d < kWarpSize; d *= 2) {
    const uint32_t gx = __shfl_up_sync(kFullMask, inc.x, d), gy = __shfl_up_sync(kFullMask, inc.y, d);
    if (lane >= d) {
      inc.x += gx;
      inc.y += gy;
    }
  }
  if (lane == kWarpSize - 1) warpSums[warp] = inc;
  __syncthreads();
  uint2 before = make_uint2(0, 0), all = make_uint2(0, 0);
  for (int w = 0; w < kThreads / kWarpSize; ++w) {
    if (w < warp) {
      before.x += warpSums[w].x;
      before.y += warpSums[w].y;
    }
    all.x += warpSums[w].x;
    all.y += warpSums[w].y;
  }
  __syncthreads();  // warpSums may be reused by the next call
  *total = all;
  return make_uint2(before.x + inc.x - v.x, before.y + inc.y - v.y);
}

// ---- radix select -------------------------------------------------------------------------------------------------

__global__ void initStateKernel(TopkState* st, uint32_t rank) { *st = TopkState{0, 0, rank, 0, 0, 0, 0, 0, 0, 0}; }

template <class Keys>
__global__ void histogramKernel(Keys keys, size_t count, const TopkState* st, Digit d, uint32_t* hist) {
  __shared__ uint32_t local[kBins];
  if (st->skip) return;  // uniform over the grid
  for (int i = threadIdx.x; i < kBins; i += blockDim.x) local[i] = 0;
  __syncthreads();
  const uint32_t prefix = st->prefix, prefixMask = st->prefixMask, binMask = (1u << d.width) - 1u;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t key = keys(i);
    if ((key & prefixMask) == prefix) atomicAdd(&local[(key >> d.shift) & binMask], 1u);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kBins; i += blockDim.x) {
    if (local[i] != 0) atomicAdd(&hist[i], local[i]);
  }
}

// Finds the bin holding the target rank, as the CPU's walk from the largest keys down does: each thread sums a
// run of bins (thread 0 the top ones), a scan gives the count above each run, and the one thread whose run holds
// the target walks it. Launched with kThreads threads.
__global__ void pickBinKernel(TopkState* st, const uint32_t* hist, Digit d) {
  if (st->skip) return;  // uniform over the block
  const int bins = 1 << d.width;
  const int per = bins / kThreads;
  const int top = bins - 1 - static_cast<int>(threadIdx.x) * per;  // this thread's bins: top down to top-per+1
  const uint32_t remaining = st->remaining;                        // read by all before the winner writes
  uint32_t local = 0;
  for (int k = 0; k < per; ++k) local += hist[top - k];
  uint2 total;
  const uint32_t above = blockExclusiveScan(make_uint2(local, 0), &total).x;
  if (above < remaining && remaining <= above + local) {
    uint32_t r = remaining - above;
    int bin = top;
    while (hist[bin] < r) {
      r -= hist[bin];
      --bin;
    }
    st->greater += remaining - r;
    st->remaining = r;
    st->prefix |= static_cast<uint32_t>(bin) << d.shift;
    st->prefixMask |= ((1u << d.width) - 1u) << d.shift;
  }
}

// Exact: keep the k - greater lowest-index ties.
__global__ void finishThresholdKernel(TopkState* st, uint32_t k) {
  st->threshold = st->prefix;
  st->tieBudget = k - st->greater;
  st->cap = k;
}

// Sampled: the sample's T becomes the threshold of a candidate count, with no tie budget or cap to bind.
__global__ void countSampledCandidatesKernel(TopkState* st) {
  st->sampledThreshold = st->prefix;
  st->threshold = st->prefix;
  st->tieBudget = 0xffffffffu;
  st->cap = 0xffffffffu;
}

// After the count (scanTilesKernel left it in st->count): when more than k candidates, the radix select over the
// chunk runs from a fresh state; otherwise its kernels are skipped.
__global__ void beginRefineKernel(TopkState* st, uint32_t k) {
  st->skip = st->count > k ? 0u : 1u;
  st->prefix = 0;
  st->prefixMask = 0;
  st->remaining = k;
  st->greater = 0;
}

// Refined: the exact rule (k - greater lowest-index ties). Not refined: every candidate (key >= T, at most k).
__global__ void finishSampledKernel(TopkState* st, uint32_t k) {
  if (st->skip) {
    st->threshold = st->sampledThreshold;
    st->tieBudget = k;
  } else {
    st->threshold = st->prefix;
    st->tieBudget = k - st->greater;
  }
  st->cap = k;
  st->skip = 0;
}

// The three histogram passes and bin picks of a radix select from the state set up before (rank in remaining).
template <class FirstKeys, class Keys>
void radixPasses(FirstKeys first, Keys keys, size_t count, const Workspace& w, cudaStream_t stream) {
  const unsigned grid = gridFor(count, kThreads * 16, 1024);
  for (int pass = 0; pass < 3; ++pass) {
    check(cudaMemsetAsync(w.hist, 0, sizeof(uint32_t) * kBins, stream), "topk histogram reset");
    if (pass == 0) {
      TERN_LAUNCH(histogramKernel<FirstKeys>, grid, kThreads, stream)(first, count, w.state, kDigits[pass], w.hist);
    } else {
      TERN_LAUNCH(histogramKernel<Keys>, grid, kThreads, stream)(keys, count, w.state, kDigits[pass], w.hist);
    }
    TERN_LAUNCH(pickBinKernel, 1, kThreads, stream)(w.state, w.hist, kDigits[pass]);
  }
  checkLaunch("topk radix select");
}

// Leaves the key of the rank-th largest of `count` keys in st->prefix (and the count of larger keys in
// st->greater). The first pass reads `first` (which may store v into the residual), later passes read `keys`.
template <class FirstKeys, class Keys>
void radixSelect(FirstKeys first, Keys keys, size_t count, uint32_t rank, const Workspace& w, cudaStream_t stream) {
  TERN_LAUNCH(initStateKernel, 1, 1, stream)(w.state, rank);
  radixPasses(first, keys, count, w, stream);
}

// ---- sampling -----------------------------------------------------------------------------------------------------

template <class In>
__global__ void sampleKernel(const typename In::Elem* x, const float* residual, size_t n, size_t m, RngKey key,
                             uint64_t offset, uint32_t* out) {
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < m;
       j += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t i = rngBelow(rngBits(key, offset + j), static_cast<uint32_t>(n));
    const float v = residual ? addRn(In::load(x, i), residual[i]) : In::load(x, i);
    out[j] = absKey(v);
  }
}

// ---- selection ----------------------------------------------------------------------------------------------------

// Per tile: how many keys are greater than / equal to the threshold.
template <class In, TopkSource kSource>
__global__ void countKernel(const typename In::Elem* x, float* residual, size_t n, const TopkState* st,
                            uint32_t* tileCounts) {
  const uint32_t t = st->threshold;
  for (size_t tile = blockIdx.x; tile < tiles(n); tile += gridDim.x) {
    uint2 c = make_uint2(0, 0);
    const size_t first = tile * kTile + static_cast<size_t>(threadIdx.x) * kItems;
    for (int k = 0; k < kItems; ++k) {
      const size_t i = first + k;
      if (i >= n) break;
      const uint32_t key = absKey(topkLoad<In, kSource>(x, residual, i));
      c.x += key > t;
      c.y += key == t;
    }
    uint2 total;
    blockExclusiveScan(c, &total);
    if (threadIdx.x == 0) {
      tileCounts[2 * tile] = total.x;
      tileCounts[2 * tile + 1] = total.y;
    }
  }
}

// One CTA: exclusive scan of the tile counts; the kept count goes to the state and the payload header (also run
// for the sampled candidate count, whose header the selection's own scan rewrites).
__global__ void scanTilesKernel(const uint32_t* tileCounts, uint32_t* tileOffsets, size_t numTiles, TopkState* st,
                                uint32_t* header, uint32_t n) {
  __shared__ uint2 buf[kScanThreads];
  __shared__ uint2 carry;
  if (threadIdx.x == 0) carry = make_uint2(0, 0);
  __syncthreads();
  for (size_t base = 0; base < numTiles; base += kScanThreads) {
    const size_t tile = base + threadIdx.x;
    const uint2 v = tile < numTiles ? make_uint2(tileCounts[2 * tile], tileCounts[2 * tile + 1]) : make_uint2(0, 0);
    buf[threadIdx.x] = v;
    __syncthreads();
    // Hillis-Steele inclusive scan (integer sums: any order gives the same result).
    for (int d = 1; d < kScanThreads; d *= 2) {
      uint2 add = make_uint2(0, 0);
      if (static_cast<int>(threadIdx.x) >= d) add = buf[threadIdx.x - d];
      __syncthreads();
      buf[threadIdx.x].x += add.x;
      buf[threadIdx.x].y += add.y;
      __syncthreads();
    }
    if (tile < numTiles) {
      tileOffsets[2 * tile] = carry.x + buf[threadIdx.x].x - v.x;
      tileOffsets[2 * tile + 1] = carry.y + buf[threadIdx.x].y - v.y;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      carry.x += buf[kScanThreads - 1].x;
      carry.y += buf[kScanThreads - 1].y;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const uint32_t ties = carry.y < st->tieBudget ? carry.y : st->tieBudget;
    const uint32_t kept = carry.x + ties < st->cap ? carry.x + ties : st->cap;
    st->count = kept;
    header[0] = kept;
    header[1] = n;
  }
}

template <class In, TopkSource kSource, bool kFp16>
__global__ void writeKernel(const typename In::Elem* x, float* residual, size_t n, const TopkState* st,
                            const uint32_t* tileOffsets, uint8_t* payload) {
  const uint32_t t = st->threshold, budget = st->tieBudget, cap = st->cap;
  uint32_t* indices = reinterpret_cast<uint32_t*>(payload + kTopkHeaderBytes);
  uint8_t* values = payload + topkValuesOffset(st->count);
  for (size_t tile = blockIdx.x; tile < tiles(n); tile += gridDim.x) {
    const size_t first = tile * kTile + static_cast<size_t>(threadIdx.x) * kItems;
    uint2 c = make_uint2(0, 0);
    for (int k = 0; k < kItems; ++k) {
      const size_t i = first + k;
      if (i >= n) break;
      const uint32_t key = absKey(topkLoad<In, kSource>(x, residual, i));
      c.x += key > t;
      c.y += key == t;
    }
    uint2 total;
    const uint2 before = blockExclusiveScan(c, &total);
    uint32_t g = tileOffsets[2 * tile] + before.x, e = tileOffsets[2 * tile + 1] + before.y;
    for (int k = 0; k < kItems; ++k) {
      const size_t i = first + k;
      if (i >= n) break;
      const float v = topkLoad<In, kSource>(x, residual, i);
      const uint32_t key = absKey(v);
      const bool candidate = key > t || (key == t && e < budget);
      const uint32_t slot = g + (e < budget ? e : budget);
      const bool keep = candidate && slot < cap;
      if (keep) {
        indices[slot] = static_cast<uint32_t>(i);
        if (kFp16) {
          reinterpret_cast<uint16_t*>(values)[slot] = floatToHalfBits(v);
        } else {
          reinterpret_cast<float*>(values)[slot] = v;
        }
      }
      if (kSource != TopkSource::kInput) residual[i] = keep ? subRn(v, topkDecodedValue(v, kFp16)) : v;
      g += key > t;
      e += key == t;
    }
  }
}

__global__ void decodeKernel(const uint8_t* payload, size_t n, size_t maxCount, bool fp16, float* out,
                             bool accumulate) {
  const uint32_t* header = reinterpret_cast<const uint32_t*>(payload);
  const size_t count = header[0];
  if (header[1] != n || count > maxCount) return;  // not a payload of this chunk
  const uint32_t* indices = header + 2;
  const uint8_t* values = payload + topkValuesOffset(count);
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < count;
       j += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t i = indices[j];
    if (i >= n) continue;
    const float v = fp16 ? halfBitsToFloat(reinterpret_cast<const uint16_t*>(values)[j])
                         : reinterpret_cast<const float*>(values)[j];
    out[i] = accumulate ? addRn(out[i], v) : v;
  }
}

// Counts the candidates of the sampled threshold (key >= T) into st->count.
template <class In, TopkSource kSource>
void countCandidates(const typename In::Elem* x, float* residual, size_t n, uint8_t* payload, const Workspace& w,
                     cudaStream_t stream) {
  const unsigned grid = gridFor(tiles(n), 1);
  TERN_LAUNCH((countKernel<In, kSource>), grid, kThreads, stream)(x, residual, n, w.state, w.tileCounts);
  TERN_LAUNCH(scanTilesKernel, 1, kScanThreads, stream)
  (w.tileCounts, w.tileOffsets, tiles(n), w.state, reinterpret_cast<uint32_t*>(payload), static_cast<uint32_t>(n));
  checkLaunch("topk candidate count");
}

// Sampled threshold, refined to the exact one when more than k elements reach it. Reads v without storing it:
// the selection pass that follows writes the residual.
template <class In, TopkSource kSource>
void sampledThreshold(const TopkPlan& plan, const typename In::Elem* x, float* residual, size_t n, uint8_t* payload,
                      const EncodeContext& ctx, const Workspace& w, cudaStream_t stream) {
  const uint32_t k = static_cast<uint32_t>(plan.k);
  const RngKey key = makeRngKey(ctx.seed, ctx.step, kRngStreamTopkSample);
  TERN_LAUNCH(sampleKernel<In>, gridFor(plan.sampleSize, kThreads), kThreads, stream)
  (x, residual, n, plan.sampleSize, key, ctx.offset, w.sampleKeys);
  checkLaunch("topk sample");
  const ArrayKeys sampled{w.sampleKeys};
  radixSelect(sampled, sampled, plan.sampleSize, static_cast<uint32_t>(plan.sampleRank), w, stream);
  TERN_LAUNCH(countSampledCandidatesKernel, 1, 1, stream)(w.state);
  countCandidates<In, kSource>(x, residual, n, payload, w, stream);
  TERN_LAUNCH(beginRefineKernel, 1, 1, stream)(w.state, k);
  const ElementKeys<In, kSource, false> keys{x, residual};
  radixPasses(keys, keys, n, w, stream);
  TERN_LAUNCH(finishSampledKernel, 1, 1, stream)(w.state, k);
  checkLaunch("topk sampled threshold");
}

template <class In, TopkSource kSource>
void select(const CodecParams& p, const typename In::Elem* x, float* residual, size_t n, uint8_t* payload,
            const Workspace& w, cudaStream_t stream) {
  const unsigned grid = gridFor(tiles(n), 1);
  TERN_LAUNCH((countKernel<In, kSource>), grid, kThreads, stream)(x, residual, n, w.state, w.tileCounts);
  TERN_LAUNCH(scanTilesKernel, 1, kScanThreads, stream)
  (w.tileCounts, w.tileOffsets, tiles(n), w.state, reinterpret_cast<uint32_t*>(payload), static_cast<uint32_t>(n));
  if (p.topkFp16Values) {
    TERN_LAUNCH((writeKernel<In, kSource, true>), grid, kThreads, stream)
    (x, residual, n, w.state, w.tileOffsets, payload);
  } else {
    TERN_LAUNCH((writeKernel<In, kSource, false>), grid, kThreads, stream)
    (x, residual, n, w.state, w.tileOffsets, payload);
  }
  checkLaunch("topk selection");
}

template <class In>
void encodeTyped(const CodecParams& p, const typename In::Elem* x, size_t n, uint8_t* payload, const EncodeContext& ctx,
                 float* residual, const Workspace& w, cudaStream_t stream) {
  const TopkPlan plan = topkPlan(p, n);
  const uint32_t k = static_cast<uint32_t>(plan.k);
  if (plan.sampled) {
    if (residual) {
      sampledThreshold<In, TopkSource::kInputAndResidual>(plan, x, residual, n, payload, ctx, w, stream);
      select<In, TopkSource::kInputAndResidual>(p, x, residual, n, payload, w, stream);
    } else {
      sampledThreshold<In, TopkSource::kInput>(plan, x, residual, n, payload, ctx, w, stream);
      select<In, TopkSource::kInput>(p, x, residual, n, payload, w, stream);
    }
  } else if (residual) {
    // The first histogram pass stores v = x + residual; everything after reads v from the residual.
    radixSelect(ElementKeys<In, TopkSource::kInputAndResidual, true>{x, residual},
                ElementKeys<F32Input, TopkSource::kResidual, false>{residual, residual}, n, k, w, stream);
    TERN_LAUNCH(finishThresholdKernel, 1, 1, stream)(w.state, k);
    select<F32Input, TopkSource::kResidual>(p, residual, residual, n, payload, w, stream);
  } else {
    const ElementKeys<In, TopkSource::kInput, false> keys{x, nullptr};
    radixSelect(keys, keys, n, k, w, stream);
    TERN_LAUNCH(finishThresholdKernel, 1, 1, stream)(w.state, k);
    select<In, TopkSource::kInput>(p, x, residual, n, payload, w, stream);
  }
}

__global__ void emptyHeaderKernel(uint32_t* header) {
  header[0] = 0;
  header[1] = 0;
}

}  // namespace

size_t topkWorkspaceBytes(const CodecParams& p, size_t n) {
  const TopkPlan plan = topkPlan(p, n);
  return align16(sizeof(TopkState)) + align16(sizeof(uint32_t) * kBins) + 2 * align16(sizeof(uint32_t) * 2 * tiles(n)) +
         align16(sizeof(uint32_t) * plan.sampleSize);
}

void topkEncode(const CodecParams& p, const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                const EncodeContext& ctx, float* residual, void* workspace, cudaStream_t stream) {
  if (n == 0) {
    TERN_LAUNCH(emptyHeaderKernel, 1, 1, stream)(reinterpret_cast<uint32_t*>(payload));
    checkLaunch("topk header");
    return;
  }
  const Workspace w = carve(workspace, n, topkPlan(p, n).sampleSize);
  withInputType(dtype, [&](auto tag) {
    using In = decltype(tag);
    encodeTyped<In>(p, static_cast<const typename In::Elem*>(in), n, payload, ctx, residual, w, stream);
  });
}

void topkDecode(const CodecParams& p, const uint8_t* payload, size_t n, float* out, bool accumulate,
                cudaStream_t stream) {
  const size_t maxCount = topkPlan(p, n).k;
  if (!accumulate && n > 0) check(cudaMemsetAsync(out, 0, n * sizeof(float), stream), "topk decode clear");
  if (maxCount == 0) return;
  TERN_LAUNCH(decodeKernel, gridFor(maxCount, kThreads), kThreads, stream)
  (payload, n, maxCount, p.topkFp16Values, out, accumulate);
  checkLaunch("topk decode");
}

}  // namespace tern::compress::cuda
