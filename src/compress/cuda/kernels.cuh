// Host-side launchers of the per-codec CUDA kernels (one .cu file per codec), called by codec_cuda.cu after it
// has validated the arguments.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/codec.hpp"
#include "compress/cuda/runtime.hpp"

namespace tern::compress::cuda {

size_t signWorkspaceBytes(size_t n);
void signEncode(const CodecParams& p, const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, float* residual,
                void* workspace, cudaStream_t stream);
void signDecode(const uint8_t* payload, size_t n, float* out, bool accumulate, cudaStream_t stream);

void qsgdEncode(const CodecParams& p, const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                const EncodeContext& ctx, float* residual, cudaStream_t stream);
void qsgdDecode(const CodecParams& p, const uint8_t* payload, size_t n, float* out, bool accumulate,
                cudaStream_t stream);

size_t topkWorkspaceBytes(const CodecParams& p, size_t n);
void topkEncode(const CodecParams& p, const void* in, ternDataType_t dtype, size_t n, uint8_t* payload,
                const EncodeContext& ctx, float* residual, void* workspace, cudaStream_t stream);
void topkDecode(const CodecParams& p, const uint8_t* payload, size_t n, float* out, bool accumulate,
                cudaStream_t stream);

void castEncode(const CodecParams& p, const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, float* residual,
                cudaStream_t stream);
void castDecode(const CodecParams& p, const uint8_t* payload, size_t n, float* out, bool accumulate,
                cudaStream_t stream);

}  // namespace tern::compress::cuda
