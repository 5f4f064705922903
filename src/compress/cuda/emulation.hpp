// A CPU emulation of the CUDA execution model, enough for the codec kernels: it lets their logic be run and
// debugged on machines without a GPU (compare with the CPU codecs through codec_cuda_test). Not a performance or
// memory-model model: each GPU thread is a std::thread, blocks run one after another, __shared__ becomes static
// storage, warp shuffles and ballots exchange through a per-warp slot array between barriers, "device" memory is
// host memory, and streams are synchronous. Kernels must keep whole warps converged at warp operations (as they
// must on a GPU). Build, from the repository root:
//
//   for f in src/compress/cuda/*.cu; do
//     g++ -std=c++20 -O1 -x c++ -DTERN_CUDA_EMULATION -Iinclude -Isrc -c $f -o /tmp/emu_$(basename $f).o; done
//   g++ /tmp/emu_*.o src/compress/*.cpp src/base/error.cpp -Iinclude -Isrc -std=c++20 -O2 -pthread -o codec_emu
//   ./codec_emu --sizes=0,1,33,1025,5000 --no-bench
#pragma once

#if !defined(TERN_CUDA_EMULATION)
#error "emulation.hpp is only for builds with TERN_CUDA_EMULATION"
#endif

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

typedef int cudaError_t;
enum { cudaSuccess = 0 };
typedef void* cudaStream_t;
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
inline const char* cudaGetErrorString(cudaError_t) { return "emulated error"; }
inline cudaError_t cudaGetLastError() { return 0; }
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t = nullptr) {
  std::memset(p, v, n);
  return 0;
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) {
  std::memset(p, v, n);
  return 0;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t = nullptr) {
  std::memcpy(d, s, n);
  return 0;
}
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
  std::memcpy(d, s, n);
  return 0;
}
inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = std::malloc(n ? n : 1);
  std::memset(*p, 0xab, n);
  return 0;
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return 0;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return 0; }
inline cudaError_t cudaDeviceSynchronize() { return 0; }
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return 0;
}
struct cudaDeviceProp {
  char name[256];
  int major, minor;
};
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::strcpy(p->name, "CPU emulation");
  p->major = 9;
  p->minor = 0;
  return 0;
}
typedef std::chrono::steady_clock::time_point* cudaEvent_t;
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new std::chrono::steady_clock::time_point();
  return 0;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  *e = std::chrono::steady_clock::now();
  return 0;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return 0; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(*b - *a).count();
  return 0;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return 0;
}

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint2 {
  unsigned x, y;
};
inline uint2 make_uint2(unsigned a, unsigned b) { return uint2{a, b}; }

namespace tern_emu {

struct Block {
  explicit Block(unsigned threads) : sync(threads) {
    for (unsigned w = 0; w * 32 < threads; ++w) {
      unsigned lanes = threads - w * 32 < 32 ? threads - w * 32 : 32;
      warps.push_back(std::make_unique<std::barrier<>>(lanes));
      slots.emplace_back(32);
    }
  }
  std::barrier<> sync;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<std::vector<uint64_t>> slots;
};

struct Ctx {
  dim3 tid, bid, bdim, gdim;
  Block* block = nullptr;
};
inline thread_local Ctx ctx;

template <class K>
struct Launcher {
  dim3 grid, block;
  K kernel;
  template <class... A>
  void operator()(A... args) {
    for (unsigned b = 0; b < grid.x; ++b) {
      Block blk(block.x);
      std::vector<std::thread> threads;
      threads.reserve(block.x);
      for (unsigned t = 0; t < block.x; ++t) {
        threads.emplace_back([&, t, b] {
          ctx.tid = dim3(t);
          ctx.bid = dim3(b);
          ctx.bdim = block;
          ctx.gdim = grid;
          ctx.block = &blk;
          kernel(args...);
          blk.warps[t / 32]->arrive_and_drop();
          blk.sync.arrive_and_drop();
        });
      }
      for (auto& th : threads) th.join();
    }
  }
};

template <class K>
Launcher<K> launch(dim3 grid, dim3 block, K kernel) {
  return Launcher<K>{grid, block, kernel};
}

inline void warpSync() { ctx.block->warps[ctx.tid.x / 32]->arrive_and_wait(); }

template <class T>
T exchange(T v, int srcLane, bool valid) {
  auto& slots = ctx.block->slots[ctx.tid.x / 32];
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  slots[ctx.tid.x % 32] = bits;
  warpSync();
  T r = v;
  if (valid) std::memcpy(&r, &slots[srcLane], sizeof(T));
  warpSync();
  return r;
}

}  // namespace tern_emu

#define threadIdx (::tern_emu::ctx.tid)
#define blockIdx (::tern_emu::ctx.bid)
#define blockDim (::tern_emu::ctx.bdim)
#define gridDim (::tern_emu::ctx.gdim)

inline void __syncthreads() { ::tern_emu::ctx.block->sync.arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { ::tern_emu::warpSync(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <class T>
T __shfl_down_sync(unsigned, T v, int d) {
  int lane = ::tern_emu::ctx.tid.x % 32;
  return ::tern_emu::exchange(v, lane + d, lane + d < 32);
}
template <class T>
T __shfl_up_sync(unsigned, T v, int d) {
  int lane = ::tern_emu::ctx.tid.x % 32;
  return ::tern_emu::exchange(v, lane - d, lane - d >= 0);
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int d) {
  int lane = ::tern_emu::ctx.tid.x % 32;
  return ::tern_emu::exchange(v, lane ^ d, true);
}
inline unsigned __ballot_sync(unsigned, int pred) {
  auto& slots = ::tern_emu::ctx.block->slots[::tern_emu::ctx.tid.x / 32];
  slots[::tern_emu::ctx.tid.x % 32] = pred ? 1 : 0;
  ::tern_emu::warpSync();
  unsigned w = 0;
  for (int i = 0; i < 32; ++i) w |= static_cast<unsigned>(slots[i] & 1) << i;
  ::tern_emu::warpSync();
  return w;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
