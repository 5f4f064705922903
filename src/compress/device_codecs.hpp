// The codecs on device memory, asynchronous on a CUDA stream: what a compressed collective on device buffers runs
// on the GPU (encode with error feedback, decode, the hierarchical form's uncompressed sums, the average's division,
// the cast to a 16-bit output), so that only
// payloads leave the device. The same bits as the CPU codecs (codec.hpp) and the CPU executor's steps for the same
// input, seed, step and offset (codec_cuda.hpp; checked on a GPU by codec_cuda_test).
//
// An interface, because the library itself links no CUDA runtime call into its core: the CUDA implementation
// (compress/cuda/device_codecs_cuda.cu, built where nvcc is) registers itself when it is linked in, and the unit tests
// register a double that runs the CPU codecs on host threads posing as streams. Streams are opaque (cudaStream_t).
#pragma once

#include <cstddef>

#include "compress/codec.hpp"
#include "tern/tern.h"

namespace tern::compress {

class DeviceCodecs {
 public:
  virtual ~DeviceCodecs() = default;

  // "cuda", ...: for messages.
  virtual const char* name() const = 0;

  // Device memory, synchronous (for state that lives as long as a compressor, and per-call scratch). allocDevice
  // throws tern::Error(ternSystemError) when the device has no room.
  virtual void* allocDevice(size_t bytes) = 0;
  virtual void freeDevice(void* p) = 0;
  // p[0..bytes) = 0, on stream.
  virtual void zeroAsync(void* p, size_t bytes, void* stream) = 0;

  // Scratch bytes an encode of n elements needs (0 for codecs that need none).
  virtual size_t workspaceBytes(const Codec& codec, size_t n) = 0;
  // payload = encode(in[0..n) of dtype), through the n-float residual when it is not null; on stream. The payload
  // takes codec.payloadBytes(n) bytes (Top-K: its header holds the kept count).
  virtual void encodeAsync(const Codec& codec, const void* in, ternDataType_t dtype, size_t n, void* payload,
                           const EncodeContext& ctx, float* residual, void* workspace, size_t workspaceBytes,
                           void* stream) = 0;
  // out[0..n) (fp32) = or += decode(payload); on stream.
  virtual void decodeAsync(const Codec& codec, const void* payload, size_t n, float* out, bool accumulate,
                           void* stream) = 0;
  // dst[0..n) = a + b (fp32, IEEE addition, as the CPU's sum); dst may be a or b; on stream.
  virtual void addAsync(float* dst, const float* a, const float* b, size_t n, void* stream) = 0;
  // x[0..n) /= divisor (IEEE fp32 division, as the CPU's finalizeAverage); on stream.
  virtual void divideAsync(float* x, size_t n, int divisor, void* stream) = 0;
  // dst[0..n) (fp16 or bf16) = src rounded to nearest even; on stream.
  virtual void castAsync(void* dst, ternDataType_t dtype, const float* src, size_t n, void* stream) = 0;
};

// The implementation linked into this library (the CUDA one where it was built), or nullptr.
DeviceCodecs* builtinDeviceCodecs();
// Called by an implementation's static initializer; the last one registered wins.
void registerDeviceCodecs(DeviceCodecs* codecs);

}  // namespace tern::compress
