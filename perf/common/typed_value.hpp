// One element of a buffer of any tern datatype, read or written as a double: how the perf binaries fill and check
// their buffers and how the collectives tests build their references. Header-only and on the public API alone
// (the perf binaries see nothing else of the library). fp16/bf16 go through the library's own conversion (ternConvert),
// so values are rounded exactly as the collectives round them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tern/tern_ext.h"

namespace tern::perf {

inline uint16_t toHalfType(float f, ternDataType_t t) {
  uint16_t h = 0;
  ternConvert(&f, ternFloat32, &h, t, 1);
  return h;
}

inline float fromHalfType(uint16_t h, ternDataType_t t) {
  float f = 0;
  ternConvert(&h, t, &f, ternFloat32, 1);
  return f;
}

// buf[i] = v converted to t (integers truncate, as a cast does).
inline void storeTyped(void* buf, size_t i, ternDataType_t t, double v) {
  switch (t) {
    case ternInt8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case ternUint8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case ternInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case ternUint32:
      static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v);
      break;
    case ternInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case ternUint64:
      static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v);
      break;
    case ternFloat16:
    case ternBfloat16:
      static_cast<uint16_t*>(buf)[i] = toHalfType(static_cast<float>(v), t);
      break;
    case ternFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case ternFloat64:
      static_cast<double*>(buf)[i] = v;
      break;
    default:
      break;
  }
}

// buf[i] of type t as a double.
inline double loadTyped(const void* buf, size_t i, ternDataType_t t) {
  switch (t) {
    case ternInt8:
      return static_cast<const int8_t*>(buf)[i];
    case ternUint8:
      return static_cast<const uint8_t*>(buf)[i];
    case ternInt32:
      return static_cast<const int32_t*>(buf)[i];
    case ternUint32:
      return static_cast<const uint32_t*>(buf)[i];
    case ternInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case ternUint64:
      return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case ternFloat16:
    case ternBfloat16:
      return fromHalfType(static_cast<const uint16_t*>(buf)[i], t);
    case ternFloat32:
      return static_cast<const float*>(buf)[i];
    case ternFloat64:
      return static_cast<const double*>(buf)[i];
    default:
      return 0;
  }
}

}  // namespace tern::perf
