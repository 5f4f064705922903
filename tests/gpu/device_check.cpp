// The collectives matrix (tests/mp/collectives_matrix.hpp) on a GPU: every collective, datatype and op, in and out
// of place, with every buffer in CUDA device memory (cudaMalloc) and the calls made through tern_cuda.h's
// stream-ordered functions on a stream of this process. Several ranks share one GPU (tests/gpu/run.sh starts 2-4
// processes with tern-run). Without a CUDA device it prints "SKIPPED: ..." and exits with 77, which ctest reports as
// skipped, never as passed.
//
// `compressed`: TERN_COMPRESS on device buffers, the codecs on the GPU (core/device_compressed_calls.hpp): the
// launcher's environment names the codec (TERN_COMPRESS) and TERN_COMPRESS_WHEN=always; each call's result must
// equal, bit for bit, the host path's compressed allreduce of the same inputs (CPU codecs), call after call.
//
//   tern-run -n N tern_gpu_device_check [all] [--large full|subset|lean|none]
//   TERN_COMPRESS=sign TERN_COMPRESS_WHEN=always tern-run -n N tern_gpu_device_check compressed
#include <cuda_runtime_api.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mp/collectives_matrix.hpp"
#include "mp/rank_check.hpp"
#include "tern/tern_ext.h"

namespace {

#define CUDA_OK(call) CHECK((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

class CudaDevice final : public collectives_matrix::DeviceMemory {
 public:
  CudaDevice() { CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaDevice() override { cudaStreamDestroy(stream_); }
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    CUDA_OK(cudaMalloc(&p, bytes));
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* device, const void* host, size_t bytes) override {
    CUDA_OK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  }
  void download(void* host, const void* device, size_t bytes) override {
    CUDA_OK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  }
  cudaStream_t stream() override { return stream_; }
  void synchronize() override { CUDA_OK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

// Values in [-1, 1) that differ per rank, call and element.
float gradient(int rank, int call, size_t i) {
  uint64_t x = (static_cast<uint64_t>(rank) << 48) ^ (static_cast<uint64_t>(call) << 40) ^ i;
  x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
  return static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

void compressedCheck(ternComm_t comm, CudaDevice& device) {
  const char* codec = std::getenv("TERN_COMPRESS");
  CHECK(codec != nullptr && *codec != 0, "compressed: set TERN_COMPRESS (and TERN_COMPRESS_WHEN=always)");
  for (ternRedOp_t op : {ternSum, ternAvg}) {
    for (size_t count : {size_t{70001}, (size_t{1} << 21) + 5}) {
      const size_t bytes = count * sizeof(float);
      std::vector<float> hostIn(count), hostOut(count), got(count);
      void* in = device.alloc(bytes);
      void* out = device.alloc(bytes);
      for (int call = 0; call < 3; ++call) {
        for (size_t i = 0; i < count; ++i) hostIn[i] = gradient(rank_check::rank, call, i);
        OK(ternAllReduce(hostIn.data(), hostOut.data(), count, ternFloat32, op, comm), comm);
        device.upload(in, hostIn.data(), bytes);
        OK(ternAllReduceOnStream(in, out, count, ternFloat32, op, comm, device.stream()), comm);
        char algorithm[128] = {};
        ternCommLastAlgorithm(comm, algorithm, sizeof algorithm);
        CHECK(std::strstr(algorithm, "cuda") != nullptr, "compressed: %s ran, not the GPU codecs", algorithm);
        device.synchronize();
        device.download(got.data(), out, bytes);
        size_t differ = 0;
        for (size_t i = 0; i < count; ++i)
          differ += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(hostOut[i]) ? 1 : 0;
        CHECK(differ == 0, "compressed %s %s, %zu floats, call %d: %zu results differ from the host path's", codec,
              op == ternSum ? "sum" : "avg", count, call, differ);
      }
      device.release(in);
      device.release(out);
    }
  }
  std::printf("rank %d: TERN_COMPRESS=%s on device buffers, GPU codecs == host path, bit for bit\n", rank_check::rank,
              codec);
}

}  // namespace

int main(int argc, char** argv) {
  using collectives_matrix::LargeCount;
  LargeCount large = LargeCount::kLean;
  const bool compressed = argc > 1 && std::strcmp(argv[1], "compressed") == 0;
  if (!compressed && !collectives_matrix::parseLargeOption(argc, argv, 2, "all|compressed", &large)) return 2;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 77;
  }
  ternComm_t comm = rank_check::initFromEnv();
  CUDA_OK(cudaSetDevice(rank_check::rank % devices));
  {
    CudaDevice device;
    if (compressed) {
      compressedCheck(comm, device);
    } else {
      collectives_matrix::runOnDevice(comm, device, large);
    }
  }
  OK(ternBarrier(comm), comm);
  std::printf("rank %d: stream-ordered collectives on device memory OK (GPU %d of %d)\n", rank_check::rank,
              rank_check::rank % devices, devices);
  ternCommDestroy(comm);
  return 0;
}
