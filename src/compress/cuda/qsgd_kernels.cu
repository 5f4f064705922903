// CUDA kernels of the QSGD codec: one warp per bucket (buckets are multiples of 32 elements). Pass 1 takes the
// bucket's max |v| with an integer warp max; pass 2 has each lane quantize 4 consecutive elements (one packed
// byte, half-word or word of codes) with the CPU's per-element functions (codec_math.hpp), so codes and residuals
// are the CPU's bit for bit. Decode: one thread per 4 elements.
#include "compress/cuda/device_common.cuh"
#include "compress/cuda/kernels.cuh"
#include "compress/payload_layout.hpp"
#include "compress/qsgd_kernels.hpp"

namespace tern::compress::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;

template <int kBits>
__device__ __forceinline__ void storeCodes(uint8_t* dst, uint32_t packed, int count) {
  if (count == 4) {
    if (kBits == 8) {
      *reinterpret_cast<uint32_t*>(dst) = packed;  // element index multiple of 4: 4-aligned
    } else if (kBits == 4) {
      *reinterpret_cast<uint16_t*>(dst) = static_cast<uint16_t>(packed);
    } else {
      *dst = static_cast<uint8_t>(packed);
    }
  } else {
    for (int j = 0; j < (count * kBits + 7) / 8; ++j) dst[j] = static_cast<uint8_t>(packed >> (8 * j));
  }
}

template <int kBits>
__device__ __forceinline__ uint32_t loadCodes(const uint8_t* src, int count) {
  if (count == 4) {
    if (kBits == 8) return *reinterpret_cast<const uint32_t*>(src);
    if (kBits == 4) return *reinterpret_cast<const uint16_t*>(src);
    return *src;
  }
  uint32_t packed = 0;
  for (int j = 0; j < (count * kBits + 7) / 8; ++j) packed |= static_cast<uint32_t>(src[j]) << (8 * j);
  return packed;
}

template <class In, bool kEF, int kBits>
__global__ void qsgdEncodeKernel(const typename In::Elem* x, size_t n, float* residual, uint8_t* payload,
                                 uint32_t bucket, RngKey key, uint64_t offset) {
  const int lane = threadIdx.x % kWarpSize;
  const float levels = static_cast<float>(qsgdMaxLevel(kBits));
  const size_t buckets = qsgdBucketCount(n, bucket);
  uint8_t* codes = payload + qsgdCodesOffset(n, bucket);
  const size_t warpStride = static_cast<size_t>(gridDim.x) * kWarpsPerBlock;
  for (size_t b = blockIdx.x * static_cast<size_t>(kWarpsPerBlock) + threadIdx.x / kWarpSize; b < buckets;
       b += warpStride) {
    const size_t start = b * bucket;
    const size_t count = n - start < bucket ? n - start : bucket;
    uint32_t mk = 0;
    for (size_t i = lane; i < count; i += kWarpSize) {
      float v = In::load(x, start + i);
      if (kEF) {
        v = addRn(v, residual[start + i]);
        residual[start + i] = v;
      }
      const uint32_t k = absKey(v);
      mk = k > mk ? k : mk;
    }
    mk = warpMax(mk);
    __syncwarp();  // pass 2 reads residuals other lanes wrote
    const float m = bitsFloat(mk);
    if (lane == 0) reinterpret_cast<float*>(payload)[b] = m;
    const float inv = qsgdInverse(m, levels), step = qsgdStep(m, levels);
    for (size_t g = static_cast<size_t>(lane) * 4; g < count; g += 4 * kWarpSize) {
      const int cnt = count - g < 4 ? static_cast<int>(count - g) : 4;
      uint32_t packed = 0;
      for (int k = 0; k < cnt; ++k) {
        const size_t e = start + g + k;
        const float v = kEF ? residual[e] : In::load(x, e);
        const uint32_t level = qsgdLevel(bitsFloat(absKey(v)), inv, levels, rngBits(key, offset + e));
        const uint32_t negative = floatBits(v) >> 31;
        if (kEF) residual[e] = subRn(v, qsgdValue(level, negative, step));
        packed |= (negative << (kBits - 1) | level) << (k * kBits);
      }
      storeCodes<kBits>(codes + (start + g) * kBits / 8, packed, cnt);
    }
  }
}

template <int kBits>
__global__ void qsgdDecodeKernel(const uint8_t* payload, size_t n, uint32_t bucket, float* out, bool accumulate) {
  const float levels = static_cast<float>(qsgdMaxLevel(kBits));
  const uint32_t mask = (1u << kBits) - 1u;
  const uint8_t* codes = payload + qsgdCodesOffset(n, bucket);
  const float* scales = reinterpret_cast<const float*>(payload);
  const size_t groups = (n + 3) / 4;
  for (size_t g = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; g < groups;
       g += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t e0 = 4 * g;
    const int cnt = n - e0 < 4 ? static_cast<int>(n - e0) : 4;
    // A group never straddles buckets. 32-bit division where it suffices (64-bit division is slow on GPUs).
    const size_t b = e0 <= 0xffffffffu ? static_cast<uint32_t>(e0) / bucket : e0 / bucket;
    const float step = qsgdStep(scales[b], levels);
    const uint32_t packed = loadCodes<kBits>(codes + e0 * kBits / 8, cnt);
    for (int k = 0; k < cnt; ++k) {
      const uint32_t code = (packed >> (k * kBits)) & mask;
      const float d = qsgdValue(code & (mask >> 1), code >> (kBits - 1), step);
      out[e0 + k] = accumulate ? addRn(out[e0 + k], d) : d;
    }
  }
}

template <int kBits>
void launchEncode(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, uint32_t bucket, RngKey key,
                  uint64_t offset, float* residual, cudaStream_t stream) {
  const unsigned grid = gridFor(qsgdBucketCount(n, bucket), kWarpsPerBlock);
  withInputType(dtype, [&](auto tag) {
    using In = decltype(tag);
    const auto* x = static_cast<const typename In::Elem*>(in);
    if (residual) {
      TERN_LAUNCH((qsgdEncodeKernel<In, true, kBits>), grid, kThreads, stream)
      (x, n, residual, payload, bucket, key, offset);
    } else {
      TERN_LAUNCH((qsgdEncodeKernel<In, false, kBits>), grid, kThreads, stream)
      (x, n, residual, payload, bucket, key, offset);
    }
  });
}

}  // namespace

void qsgdEncode(const CodecParams& p, const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                const EncodeContext& ctx, float* residual, cudaStream_t stream) {
  if (n == 0) return;
  const RngKey key = makeRngKey(ctx.seed, ctx.step, kRngStreamQsgd);
  switch (p.qsgdBits) {
    case 2:
      launchEncode<2>(in, dtype, n, payload, p.qsgdBucket, key, ctx.offset, residual, stream);
      break;
    case 4:
      launchEncode<4>(in, dtype, n, payload, p.qsgdBucket, key, ctx.offset, residual, stream);
      break;
    default:
      launchEncode<8>(in, dtype, n, payload, p.qsgdBucket, key, ctx.offset, residual, stream);
      break;
  }
  checkLaunch("qsgd encode");
}

void qsgdDecode(const CodecParams& p, const uint8_t* payload, size_t n, float* out, bool accumulate,
                cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = gridFor((n + 3) / 4, kThreads * 2);
  switch (p.qsgdBits) {
    case 2:
      TERN_LAUNCH(qsgdDecodeKernel<2>, grid, kThreads, stream)(payload, n, p.qsgdBucket, out, accumulate);
      break;
    case 4:
      TERN_LAUNCH(qsgdDecodeKernel<4>, grid, kThreads, stream)(payload, n, p.qsgdBucket, out, accumulate);
      break;
    default:
      TERN_LAUNCH(qsgdDecodeKernel<8>, grid, kThreads, stream)(payload, n, p.qsgdBucket, out, accumulate);
      break;
  }
  checkLaunch("qsgd decode");
}

}  // namespace tern::compress::cuda
