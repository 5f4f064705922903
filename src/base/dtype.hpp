// Facts about element types and reduction ops, in one place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tern/tern.h"

namespace tern {

inline bool validDataType(int dt) { return dt >= 0 && dt < ternNumTypes; }
inline bool validRedOp(int op) { return op >= 0 && op < ternNumOps; }

inline size_t dataTypeSize(ternDataType_t dt) {
  switch (dt) {
    case ternInt8:
    case ternUint8:
      return 1;
    case ternFloat16:
    case ternBfloat16:
      return 2;
    case ternInt32:
    case ternUint32:
    case ternFloat32:
      return 4;
    case ternInt64:
    case ternUint64:
    case ternFloat64:
      return 8;
    default:
      return 0;
  }
}

inline const char* dataTypeName(ternDataType_t dt) {
  static const char* names[] = {"int8",   "uint8", "int32", "uint32", "int64",
                                "uint64", "half",  "float", "double", "bfloat16"};
  return validDataType(dt) ? names[dt] : "invalid";
}

inline const char* redOpName(ternRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return validRedOp(op) ? names[op] : "invalid";
}

}  // namespace tern
