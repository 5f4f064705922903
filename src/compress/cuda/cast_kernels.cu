// CUDA kernels of the fp16/bf16 codecs: one element per thread (grid-stride), the same rounding code as the CPU
// (cast_kernels.hpp), so payloads match bit for bit, NaNs included.
#include "compress/cast_kernels.hpp"
#include "compress/cuda/device_common.cuh"
#include "compress/cuda/kernels.cuh"

namespace tern::compress::cuda {
namespace {

constexpr int kThreads = 256;

template <class In, bool kEF, bool kBf16>
__global__ void castEncodeKernel(const typename In::Elem* x, size_t n, float* residual, uint16_t* out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v = In::load(x, i);
    if (kEF) v = addRn(v, residual[i]);
    uint16_t h = castRound(v, kBf16);
    out[i] = h;
    if (kEF) residual[i] = subRn(v, castWiden(h, kBf16));
  }
}

template <bool kBf16>
__global__ void castDecodeKernel(const uint16_t* in, size_t n, float* out, bool accumulate) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float d = castWiden(in[i], kBf16);
    out[i] = accumulate ? addRn(out[i], d) : d;
  }
}

}  // namespace

void castEncode(const CodecParams& p, const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, float* residual,
                cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = gridFor(n, kThreads * 4);
  auto* out = reinterpret_cast<uint16_t*>(payload);
  withInputType(dtype, [&](auto tag) {
    using In = decltype(tag);
    const auto* x = static_cast<const typename In::Elem*>(in);
    auto launch = [&](auto ef, auto bf16) {
      TERN_LAUNCH((castEncodeKernel<In, decltype(ef)::value, decltype(bf16)::value>), grid, kThreads, stream)
      (x, n, residual, out);
    };
    bool bf16 = p.kind == CodecKind::kBf16;
    if (residual) {
      bf16 ? launch(std::true_type{}, std::true_type{}) : launch(std::true_type{}, std::false_type{});
    } else {
      bf16 ? launch(std::false_type{}, std::true_type{}) : launch(std::false_type{}, std::false_type{});
    }
  });
  checkLaunch("fp16/bf16 encode");
}

void castDecode(const CodecParams& p, const uint8_t* payload, size_t n, float* out, bool accumulate,
                cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = gridFor(n, kThreads * 4);
  const auto* in = reinterpret_cast<const uint16_t*>(payload);
  if (p.kind == CodecKind::kBf16) {
    TERN_LAUNCH(castDecodeKernel<true>, grid, kThreads, stream)(in, n, out, accumulate);
  } else {
    TERN_LAUNCH(castDecodeKernel<false>, grid, kThreads, stream)(in, n, out, accumulate);
  }
  checkLaunch("fp16/bf16 decode");
}

}  // namespace tern::compress::cuda
