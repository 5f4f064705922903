// The CPU compute backend: today's kernels behind the ComputeBackend interface.
#include <cstring>

#include "base/copy_bytes.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "compress/codec.hpp"
#include "compress/error_feedback.hpp"
#include "exec/compute_backend.hpp"
#include "kernels/reduce.hpp"

namespace tern {

namespace {

class CpuBackend final : public ComputeBackend {
 public:
  const char* name() const override { return "cpu"; }
  bool runsOn(MemoryKind kind) const override { return isHostMemory(kind); }

  void reduce(const MemRef& dst, const ConstMemRef& a, const ConstMemRef& b, ternDataType_t dtype,
              ternRedOp_t op) const override {
    tern::reduce(dst.data, a.data, b.data, dst.bytes / dataTypeSize(dtype), dtype, op);
  }

  void copy(const MemRef& dst, const ConstMemRef& src) const override {
    if (dst.data == src.data || dst.bytes == 0) return;
    const auto* d = static_cast<const char*>(dst.data);
    const auto* s = static_cast<const char*>(src.data);
    if (d + dst.bytes <= s || s + dst.bytes <= d) {
      copyBytes(dst.data, src.data, dst.bytes);
    } else {
      std::memmove(dst.data, src.data, dst.bytes);  // overlapping ranges
    }
  }

  void finalizeAverage(const MemRef& dst, ternDataType_t dtype, int divisor) const override {
    tern::finalizeAverage(dst.data, dst.bytes / dataTypeSize(dtype), dtype, divisor);
  }

  void encode(const compress::Codec& codec, compress::ErrorFeedback* feedback, const ConstMemRef& src,
              ternDataType_t srcType, uint64_t elements, const MemRef& payload,
              const compress::EncodeContext& context) const override {
    if (feedback != nullptr) {
      feedback->encode(codec, src.data, srcType, elements, payload.data, context);
    } else {
      codec.encode(src.data, srcType, elements, payload.data, context);
    }
  }

  void decode(const compress::Codec& codec, const ConstMemRef& payload, uint64_t elements, const MemRef& dst,
              bool accumulate) const override {
    codec.decode(payload.data, payload.bytes, elements, static_cast<float*>(dst.data), accumulate);
  }

  void castFromFloat(const MemRef& dst, ternDataType_t dstType, const ConstMemRef& src,
                     uint64_t elements) const override {
    const auto* from = static_cast<const float*>(src.data);
    switch (dstType) {
      case ternFloat32:
        if (dst.data != src.data) std::memmove(dst.data, from, elements * sizeof(float));
        break;
      case ternFloat16:
        for (size_t i = 0; i < elements; ++i) static_cast<uint16_t*>(dst.data)[i] = floatToHalf(from[i]);
        break;
      case ternBfloat16:
        for (size_t i = 0; i < elements; ++i) static_cast<uint16_t*>(dst.data)[i] = floatToBfloat16(from[i]);
        break;
      default:
        throwError(ternInvalidArgument, "compressed collectives support float32, float16 and bfloat16 outputs");
    }
  }
};

}  // namespace

const ComputeBackend& cpuBackend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace tern
