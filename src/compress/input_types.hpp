// Input element types a codec accepts (fp32, fp16, bf16), as tag types so that kernels are templates that widen
// to fp32 on load. Widening is exact, so an fp16 tensor encodes like the fp32 tensor of the same values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/error.hpp"
#include "compress/codec_math.hpp"
#include "tern/tern.h"

namespace tern::compress {

struct F32Input {
  using Elem = float;
  static TERN_HD float load(const Elem* p, size_t i) { return p[i]; }
};

struct F16Input {
  using Elem = uint16_t;
  static TERN_HD float load(const Elem* p, size_t i) { return halfBitsToFloat(p[i]); }
};

struct Bf16Input {
  using Elem = uint16_t;
  static TERN_HD float load(const Elem* p, size_t i) { return bf16BitsToFloat(p[i]); }
};

// Calls fn(F32Input{}), fn(F16Input{}) or fn(Bf16Input{}) for dtype; other types throw ternInvalidArgument.
template <class Fn>
decltype(auto) withInputType(ternDataType_t dtype, Fn&& fn) {
  switch (dtype) {
    case ternFloat32:
      return fn(F32Input{});
    case ternFloat16:
      return fn(F16Input{});
    case ternBfloat16:
      return fn(Bf16Input{});
    default:
      throwError(ternInvalidArgument, "codec input dtype %d is not supported (fp32, fp16 and bf16 are)",
                 static_cast<int>(dtype));
  }
}

}  // namespace tern::compress
