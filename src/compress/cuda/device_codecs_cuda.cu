// compress::DeviceCodecs on a real GPU: the codec kernels (codec_cuda.hpp) plus the two element-wise steps of a
// compressed collective that are not codecs (the average's division, the cast to a 16-bit output), registered when
// this file is linked into the library (TERN_HAVE_CUDA builds). Streams are the caller's cudaStream_t.
#include "compress/cast_kernels.hpp"
#include "compress/cuda/codec_cuda.hpp"
#include "compress/cuda/device_common.cuh"
#include "compress/device_codecs.hpp"

namespace tern::compress::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void divideKernel(float* x, size_t n, float divisor) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    x[i] = x[i] / divisor;  // IEEE division (--prec-div=true), as the CPU's
  }
}

__global__ void addKernel(float* dst, const float* a, const float* b, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = addRn(a[i], b[i]);
  }
}

__global__ void castKernel(uint16_t* dst, const float* src, size_t n, bool bf16) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = castRound(src[i], bf16);
  }
}

cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }

class CudaDeviceCodecs final : public DeviceCodecs {
 public:
  const char* name() const override { return "cuda"; }

  void* allocDevice(size_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes > 0 ? bytes : 1);
    if (e != cudaSuccess) {
      throwError(ternSystemError, "device codecs: cudaMalloc of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
    }
    return p;
  }
  void freeDevice(void* p) override {
    if (p != nullptr) cudaFree(p);
  }
  void zeroAsync(void* p, size_t bytes, void* stream) override {
    if (bytes > 0) check(cudaMemsetAsync(p, 0, bytes, asStream(stream)), "cudaMemsetAsync");
  }
  size_t workspaceBytes(const Codec& codec, size_t n) override { return cuda::workspaceBytes(codec, n); }
  void encodeAsync(const Codec& codec, const void* in, ternDataType_t dtype, size_t n, void* payload,
                   const EncodeContext& ctx, float* residual, void* workspace, size_t workspaceSize,
                   void* stream) override {
    cuda::encode(codec, in, dtype, n, payload, ctx, residual, workspace, workspaceSize, asStream(stream));
  }
  void decodeAsync(const Codec& codec, const void* payload, size_t n, float* out, bool accumulate,
                   void* stream) override {
    cuda::decode(codec, payload, n, out, accumulate, asStream(stream));
  }
  void addAsync(float* dst, const float* a, const float* b, size_t n, void* stream) override {
    if (n == 0) return;
    TERN_LAUNCH(addKernel, gridFor(n, kThreads * 4), kThreads, asStream(stream))(dst, a, b, n);
    checkLaunch("fp32 sum");
  }
  void divideAsync(float* x, size_t n, int divisor, void* stream) override {
    if (n == 0) return;
    TERN_LAUNCH(divideKernel, gridFor(n, kThreads * 4), kThreads, asStream(stream))(x, n, static_cast<float>(divisor));
    checkLaunch("average division");
  }
  void castAsync(void* dst, ternDataType_t dtype, const float* src, size_t n, void* stream) override {
    if (dtype != ternFloat16 && dtype != ternBfloat16) {
      throwError(ternInvalidArgument, "device codecs: cast to dtype %d (fp16 and bf16 only)", static_cast<int>(dtype));
    }
    if (n == 0) return;
    TERN_LAUNCH(castKernel, gridFor(n, kThreads * 4), kThreads, asStream(stream))
    (static_cast<uint16_t*>(dst), src, n, dtype == ternBfloat16);
    checkLaunch("fp16/bf16 output cast");
  }
};

// Registers the GPU codecs when the library is loaded (no CUDA call is made until a compressed call on device
// buffers runs).
struct Registrar {
  Registrar() {
    static CudaDeviceCodecs codecs;
    registerDeviceCodecs(&codecs);
  }
} registrar;

}  // namespace
}  // namespace tern::compress::cuda
