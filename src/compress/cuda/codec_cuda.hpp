// GPU implementation of the codecs (codec.hpp): the same payloads, decoded values and residuals, bit for bit, as the
// CPU kernels for the same input, seed and step (codec_math.hpp lists the rules both follow).
//
// All pointers are device pointers; calls are asynchronous on `stream` (nothing is synchronized, nothing is
// allocated). Payload pointers must be 4-byte aligned (cudaMalloc memory at any 4-byte offset). The workspace is
// scratch memory of at least workspaceBytes(codec, n) bytes, used during the call only (one per concurrent call).
//
//   size_t ws = cuda::workspaceBytes(*codec, n);           // cudaMalloc once, reuse
//   size_t bytes = cuda::encode(*codec, x, ternFloat32, n, payload, {seed, step, offset}, residual, ws_ptr, ws, s);
//   cuda::decode(*codec, payload, n, out, /*accumulate=*/true, stream);
//
// Top-K: encode returns the upper bound payloadBytes(n); the payload header (device memory) holds the kept count,
// and the used size is topkPayloadBytes(count, valueBytes). Decode reads the count from the header.
#pragma once

#include <cstddef>

#include "compress/codec.hpp"
#include "compress/cuda/runtime.hpp"

namespace tern::compress::cuda {

// Scratch bytes an encode of n elements needs (0 for codecs that need none).
size_t workspaceBytes(const Codec& codec, size_t n);

// Encodes n device elements of dtype into payload (codec.payloadBytes(n) bytes); residual (n floats, or nullptr)
// is read and updated for error feedback. Returns the payload size (Top-K: the upper bound). Throws
// tern::Error(ternInvalidArgument) for bad arguments, ternUnhandledCudaError when a launch fails.
size_t encode(const Codec& codec, const void* in, ternDataType_t dtype, size_t n, void* payload,
              const EncodeContext& ctx, float* residual, void* workspace, size_t workspaceSize, cudaStream_t stream);

// out[i] += value (accumulate) or out[i] = value for the n elements of a payload (Top-K: count from the header;
// indices outside [0, n) are ignored, so a corrupt payload cannot write out of bounds).
void decode(const Codec& codec, const void* payload, size_t n, float* out, bool accumulate, cudaStream_t stream);

}  // namespace tern::compress::cuda
