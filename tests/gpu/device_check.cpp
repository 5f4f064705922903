// The collectives matrix (tests/mp/collectives_matrix.hpp) on a GPU: every collective, datatype and op, in and out
// of place, with every buffer in CUDA device memory (cudaMalloc) and the calls made through tern_cuda.h's
// stream-ordered functions on a stream of this process. Several ranks share one GPU (tests/gpu/run.sh starts 2-4
// processes with tern-run). Without a CUDA device it prints "SKIPPED: ..." and exits with 77, which ctest reports as
// skipped, never as passed.
//
// `compressed`: TERN_COMPRESS on device buffers with the codecs on the GPU against the host path's bits
// (tests/mp/compressed_device_check.hpp).
//
//   tern-run -n N tern_gpu_device_check [all] [--large full|subset|lean|none]
//   TERN_COMPRESS=sign TERN_COMPRESS_WHEN=always tern-run -n N tern_gpu_device_check compressed
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mp/collectives_matrix.hpp"
#include "mp/compressed_device_check.hpp"
#include "mp/rank_check.hpp"

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
  // The device first, as NCCL programs do: init places this rank on its current GPU in the job topology.
  const char* launched = std::getenv("TERN_RANK");
  CUDA_OK(cudaSetDevice((launched != nullptr ? std::atoi(launched) : 0) % devices));
  ternComm_t comm = rank_check::initFromEnv();
  {
    CudaDevice device;
    if (compressed) {
      compressed_device_check::run(comm, device, "cuda");
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
