// The compute backend: what runs a schedule's local steps (reduce, copy, finalize, encode, decode, cast) on the
// memory the buffers live in. The executor never touches buffer bytes itself; it hands typed references
// (base/memory.hpp) to the backend of the call. The CPU backend runs the SIMD kernels and codecs on host memory;
// a device backend (CUDA kernels on the caller's stream) plugs in the same way for device memory.
#pragma once

#include <cstdint>

#include "base/memory.hpp"
#include "tern/tern.h"

namespace tern {

namespace compress {
class Codec;
class ErrorFeedback;
struct EncodeContext;
}  // namespace compress

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;

  // "cpu", ...: for messages.
  virtual const char* name() const = 0;

  // Whether this backend can read and write memory of this kind.
  virtual bool runsOn(MemoryKind kind) const = 0;

  // dst = a op b, element-wise over dst.bytes / sizeof(dtype) elements (avg combines as sum). dst may alias a or b
  // exactly.
  virtual void reduce(const MemRef& dst, const ConstMemRef& a, const ConstMemRef& b, ternDataType_t dtype,
                      ternRedOp_t op) const = 0;
  // dst = src (dst.bytes bytes); nothing when they are the same memory.
  virtual void copy(const MemRef& dst, const ConstMemRef& src) const = 0;
  // The last step of avg: dst /= divisor.
  virtual void finalizeAverage(const MemRef& dst, ternDataType_t dtype, int divisor) const = 0;
  // payload = codec(elements values of srcType at src), through error feedback when feedback is not null.
  virtual void encode(const compress::Codec& codec, compress::ErrorFeedback* feedback, const ConstMemRef& src,
                      ternDataType_t srcType, uint64_t elements, const MemRef& payload,
                      const compress::EncodeContext& context) const = 0;
  // dst (fp32) = or += decode(payload) over elements values.
  virtual void decode(const compress::Codec& codec, const ConstMemRef& payload, uint64_t elements, const MemRef& dst,
                      bool accumulate) const = 0;
  // dst (dstType) = src (fp32) over elements values, rounded to nearest even.
  virtual void castFromFloat(const MemRef& dst, ternDataType_t dstType, const ConstMemRef& src,
                             uint64_t elements) const = 0;
};

// The CPU kernels (kernels/reduce.hpp, the compress/ codecs) on host memory, plain or registered.
const ComputeBackend& cpuBackend();

}  // namespace tern
