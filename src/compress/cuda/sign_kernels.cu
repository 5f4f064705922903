// CUDA kernels of the sign codec, reproducing the CPU's fixed summation order (pairwise_sum.hpp):
//  1. one warp per 1024-element block: lane j adds the terms of elements j, j+32, ... (32 steps), writes the
//     block's sign bits with one ballot per step, folds the lanes with shuffle-down (16, 8, 4, 2, 1);
//  2. the block sums are reduced by the aligned pairwise tree, one CTA per segment of 2048 in shared memory,
//     repeated on the segment sums until one value is left; one thread writes the scale;
//  3. with error feedback, residual = v - (+-scale), v having been stored into the residual by step 1.
#include "compress/cuda/device_common.cuh"
#include "compress/cuda/kernels.cuh"
#include "compress/pairwise_sum.hpp"
#include "compress/payload_layout.hpp"
#include "compress/sign_kernels.hpp"

namespace tern::compress::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
constexpr int kReduceThreads = 1024;
constexpr int kSegment = 2 * kReduceThreads;

TERN_HD size_t sumBlocks(size_t n) { return (n + kSumBlock - 1) / kSumBlock; }

template <class In, bool kEF, bool kRms>
__global__ void signPass1Kernel(const typename In::Elem* x, size_t n, float* residual, uint8_t* bits,
                                float* blockSums) {
  const int lane = threadIdx.x % kWarpSize;
  const size_t bitsBytes = (n + 7) / 8;
  const size_t blocks = sumBlocks(n);
  const size_t warpStride = static_cast<size_t>(gridDim.x) * kWarpsPerBlock;
  for (size_t b = blockIdx.x * static_cast<size_t>(kWarpsPerBlock) + threadIdx.x / kWarpSize; b < blocks;
       b += warpStride) {
    float acc = 0.0f;
    for (int t = 0; t < kSumSteps; ++t) {
      const size_t first = b * kSumBlock + static_cast<size_t>(t) * kWarpSize;
      const size_t e = first + lane;
      const bool valid = e < n;
      float v = 0.0f;
      if (valid) {
        v = In::load(x, e);
        if (kEF) {
          v = addRn(v, residual[e]);
          residual[e] = v;
        }
        acc = addRn(acc, kRms ? mulRn(v, v) : bitsFloat(absKey(v)));
      }
      const uint32_t word = __ballot_sync(kFullMask, valid && v >= 0.0f);
      if (lane == 0 && first < n) {
        const size_t byte = first / 8;  // a multiple of 4: bits start 4-aligned
        if (byte + 4 <= bitsBytes) {
          *reinterpret_cast<uint32_t*>(bits + byte) = word;
        } else {
          for (size_t k = 0; byte + k < bitsBytes; ++k) bits[byte + k] = static_cast<uint8_t>(word >> (8 * k));
        }
      }
    }
    acc = warpFoldSum(acc);
    if (lane == 0) blockSums[b] = acc;
  }
}

// One CTA per aligned segment of kSegment values: the segment's pairwise tree (level by level, an odd last value
// moves up unchanged) in shared memory. Aligned power-of-two segments compute exactly the nodes of the global
// tree, so repeating this on the segment sums yields the CPU's total.
__global__ void segmentSumKernel(const float* in, size_t count, float* out) {
  __shared__ float s[kSegment];
  const size_t segments = (count + kSegment - 1) / kSegment;
  for (size_t seg = blockIdx.x; seg < segments; seg += gridDim.x) {
    const size_t base = seg * kSegment;
    int len = static_cast<int>(count - base < kSegment ? count - base : kSegment);
    for (int i = threadIdx.x; i < len; i += blockDim.x) s[i] = in[base + i];
    __syncthreads();
    while (len > 1) {
      const int half = len / 2;
      const int t = threadIdx.x;
      float v = 0.0f;
      if (t < half) v = addRn(s[2 * t], s[2 * t + 1]);
      const float carry = s[len - 1];  // moves up unchanged when len is odd
      __syncthreads();
      if (t < half) s[t] = v;
      if ((len & 1) && t == 0) s[half] = carry;
      __syncthreads();
      len = half + (len & 1);
    }
    if (threadIdx.x == 0) out[seg] = s[0];
    __syncthreads();
  }
}

__global__ void signScaleKernel(const float* total, uint64_t n, bool rms, float* scaleOut) {
  *scaleOut = n > 0 ? signScaleFromSum(*total, n, rms) : 0.0f;
}

__global__ void signResidualKernel(float* residual, size_t n, const float* scalePtr) {
  const float scale = *scalePtr;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float v = residual[i];
    residual[i] = subRn(v, v >= 0.0f ? scale : -scale);
  }
}

__global__ void signDecodeKernel(const uint8_t* payload, size_t n, float* out, bool accumulate) {
  const float scale = *reinterpret_cast<const float*>(payload);
  const uint8_t* bits = payload + 4;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float d = (bits[i / 8] >> (i % 8)) & 1u ? scale : -scale;
    out[i] = accumulate ? addRn(out[i], d) : d;
  }
}

}  // namespace

size_t signWorkspaceBytes(size_t n) {
  const size_t blocks = sumBlocks(n);
  return sizeof(float) * (blocks + (blocks + kSegment - 1) / kSegment + 1);
}

void signEncode(const CodecParams& p, const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, float* residual,
                void* workspace, cudaStream_t stream) {
  const bool rms = p.signScale == SignScale::kRms;
  float* sums = static_cast<float*>(workspace);
  float* sums2 = sums + sumBlocks(n);
  if (n > 0) {
    const unsigned grid = gridFor(sumBlocks(n), kWarpsPerBlock);
    withInputType(dtype, [&](auto tag) {
      using In = decltype(tag);
      const auto* x = static_cast<const typename In::Elem*>(in);
      auto launch = [&](auto ef, auto rmsTag) {
        TERN_LAUNCH((signPass1Kernel<In, decltype(ef)::value, decltype(rmsTag)::value>), grid, kThreads, stream)
        (x, n, residual, payload + 4, sums);
      };
      if (residual) {
        rms ? launch(std::true_type{}, std::true_type{}) : launch(std::true_type{}, std::false_type{});
      } else {
        rms ? launch(std::false_type{}, std::true_type{}) : launch(std::false_type{}, std::false_type{});
      }
    });
    checkLaunch("sign encode pass 1");
  }
  // Block sums -> segment sums -> ... -> one total, then the scale into the payload.
  float* from = sums;
  float* to = sums2;
  for (size_t count = sumBlocks(n); count > 1; count = (count + kSegment - 1) / kSegment) {
    TERN_LAUNCH(segmentSumKernel, gridFor((count + kSegment - 1) / kSegment, 1), kReduceThreads, stream)
    (from, count, to);
    float* tmp = from;
    from = to;
    to = tmp;
  }
  float* scale = reinterpret_cast<float*>(payload);
  TERN_LAUNCH(signScaleKernel, 1, 1, stream)(from, n, rms, scale);
  checkLaunch("sign scale");
  if (residual && n > 0) {
    TERN_LAUNCH(signResidualKernel, gridFor(n, kThreads * 4), kThreads, stream)(residual, n, scale);
    checkLaunch("sign residual");
  }
}

void signDecode(const uint8_t* payload, size_t n, float* out, bool accumulate, cudaStream_t stream) {
  if (n == 0) return;
  TERN_LAUNCH(signDecodeKernel, gridFor(n, kThreads * 4), kThreads, stream)(payload, n, out, accumulate);
  checkLaunch("sign decode");
}

}  // namespace tern::compress::cuda
