// Shared pieces of the CUDA codec kernels: launch macro, error checks, warp reductions that follow the CPU's
// fixed orders (pairwise_sum.hpp), and grid sizing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/codec_math.hpp"
#include "compress/cuda/runtime.hpp"
#include "base/error.hpp"

// Kernel launches go through this macro so that the kernels can also be built for a CPU emulation of the CUDA
// execution model (TERN_CUDA_EMULATION, used to debug kernel logic on machines without a GPU).
#if defined(TERN_CUDA_EMULATION)
#define TERN_LAUNCH(kernel, grid, block, stream) ::tern_emu::launch(grid, block, kernel)
#else
#define TERN_LAUNCH(kernel, grid, block, stream) kernel<<<(grid), (block), 0, (stream)>>>
#endif

namespace tern::compress::cuda {

inline constexpr unsigned kFullMask = 0xffffffffu;
inline constexpr int kWarpSize = 32;

// Throws tern::Error(ternUnhandledCudaError) naming the failed step.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throwError(ternUnhandledCudaError, "CUDA codec: %s: %s", what, cudaGetErrorString(e));
}

// Checks that the last launch was accepted.
inline void checkLaunch(const char* kernel) { check(cudaGetLastError(), kernel); }

// Blocks for a grid-stride kernel over `work` items of `perBlock` each, capped (the kernels loop). The CPU
// emulation runs few blocks (one thread per GPU thread is slow), which also exercises the grid-stride loops.
inline unsigned gridFor(size_t work, size_t perBlock, size_t cap = 65535) {
#if defined(TERN_CUDA_EMULATION)
  cap = cap < 3 ? cap : 3;
#endif
  size_t g = (work + perBlock - 1) / perBlock;
  if (g == 0) g = 1;
  return static_cast<unsigned>(g < cap ? g : cap);
}

// Step 3 of pairwise_sum.hpp: lane 0 receives lane[0] after lane[j] += lane[j + w] for w = 16, 8, 4, 2, 1.
__device__ __forceinline__ float warpFoldSum(float v) {
  for (int w = kWarpSize / 2; w >= 1; w /= 2) v = addRn(v, __shfl_down_sync(kFullMask, v, w));
  return v;
}

// Maximum over the warp (every lane receives it); integer max is order-free.
__device__ __forceinline__ uint32_t warpMax(uint32_t v) {
  for (int w = kWarpSize / 2; w >= 1; w /= 2) {
    uint32_t o = __shfl_xor_sync(kFullMask, v, w);
    v = o > v ? o : v;
  }
  return v;
}

}  // namespace tern::compress::cuda
