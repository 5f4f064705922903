// The independent reference every correctness check compares against: plain scalar code written here, never the
// library's kernels or conversions, so that a bug shared by a kernel and its reference cannot hide. Elements are
// read and written as doubles; reductions run over the ranks' values in rank order in a wider type (double for
// floating point, 64-bit integers for integers) and are rounded once to the datatype at the end, with the
// semantics tern documents and NCCL has: integer sums and products wrap in the datatype, integer averages truncate
// toward zero, floating-point averages divide once (fp16/bf16 in fp32, then round to nearest even).
//
// Header-only and on the public API's enums alone, so the unit tests, the multi-process checks and the perf
// binaries can all use it.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "tern/tern.h"

namespace tern::ref {

inline size_t elementSize(ternDataType_t t) {
  switch (t) {
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
    default:
      return 8;
  }
}

inline bool isFloating(ternDataType_t t) {
  return t == ternFloat16 || t == ternBfloat16 || t == ternFloat32 || t == ternFloat64;
}

inline bool isSigned(ternDataType_t t) { return t != ternUint8 && t != ternUint32 && t != ternUint64; }

// IEEE binary16 from binary32, round to nearest even (subnormals, infinities and NaN included). Works on the
// value, not the bits: scale into the half's integer significand range and round there.
inline uint16_t floatToHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000u : 0u;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u);
  if (a >= 65520.0) return static_cast<uint16_t>(sign | 0x7c00u);  // 65504 + half an ulp rounds (to even) up
  if (a < 0x1p-14) {  // subnormal: a multiple of 2^-24; 1024 units carry into the smallest normal's encoding
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 0x1p24)));
  }
  int e = 0;
  (void)std::frexp(a, &e);                                           // a = m * 2^e, m in [0.5, 1)
  const double significand = std::nearbyint(std::ldexp(a, 11 - e));  // [1024, 2048]; 2048 carries below
  const auto bits = static_cast<uint32_t>((e - 1 + 15) << 10) + static_cast<uint32_t>(significand) - 1024u;
  return static_cast<uint16_t>(sign | bits);
}

inline float halfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) ? 1 : 0;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(static_cast<double>(mant | 0x400u), exp - 25);
  }
  return static_cast<float>(sign ? -v : v);
}

// bfloat16 from binary32, round to nearest even; NaN stays NaN.
inline uint16_t floatToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rest = x & 0xffffu;
  uint32_t kept = x >> 16;
  if (rest > 0x8000u || (rest == 0x8000u && (kept & 1u))) ++kept;
  return static_cast<uint16_t>(kept);
}

inline float bf16ToFloat(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// buf[i] = v in datatype t: integers take v's integer value (wrapping as two's complement), floats round to nearest.
inline void store(void* buf, size_t i, ternDataType_t t, double v) {
  const auto wrapped = [v] {  // the integer value of v modulo 2^64
    return v < 0 ? static_cast<uint64_t>(-static_cast<int64_t>(-v)) : static_cast<uint64_t>(v);
  };
  switch (t) {
    case ternInt8:
    case ternUint8: {
      const auto b = static_cast<uint8_t>(wrapped());
      std::memcpy(static_cast<char*>(buf) + i, &b, 1);
      return;
    }
    case ternInt32:
    case ternUint32: {
      const auto w = static_cast<uint32_t>(wrapped());
      std::memcpy(static_cast<char*>(buf) + i * 4, &w, 4);
      return;
    }
    case ternInt64:
    case ternUint64: {
      const uint64_t w = wrapped();
      std::memcpy(static_cast<char*>(buf) + i * 8, &w, 8);
      return;
    }
    case ternFloat16:
    case ternBfloat16: {
      const float f = static_cast<float>(v);
      const uint16_t h = t == ternFloat16 ? floatToHalf(f) : floatToBf16(f);
      std::memcpy(static_cast<char*>(buf) + i * 2, &h, 2);
      return;
    }
    case ternFloat32: {
      const auto f = static_cast<float>(v);
      std::memcpy(static_cast<char*>(buf) + i * 4, &f, 4);
      return;
    }
    default:
      std::memcpy(static_cast<char*>(buf) + i * 8, &v, 8);
      return;
  }
}

// buf[i] of datatype t as a double (64-bit integers beyond 2^53 lose their low bits; the checks never use them).
inline double load(const void* buf, size_t i, ternDataType_t t) {
  const char* p = static_cast<const char*>(buf);
  switch (t) {
    case ternInt8: {
      int8_t v;
      std::memcpy(&v, p + i, 1);
      return v;
    }
    case ternUint8: {
      uint8_t v;
      std::memcpy(&v, p + i, 1);
      return v;
    }
    case ternInt32: {
      int32_t v;
      std::memcpy(&v, p + i * 4, 4);
      return v;
    }
    case ternUint32: {
      uint32_t v;
      std::memcpy(&v, p + i * 4, 4);
      return v;
    }
    case ternInt64: {
      int64_t v;
      std::memcpy(&v, p + i * 8, 8);
      return static_cast<double>(v);
    }
    case ternUint64: {
      uint64_t v;
      std::memcpy(&v, p + i * 8, 8);
      return static_cast<double>(v);
    }
    case ternFloat16:
    case ternBfloat16: {
      uint16_t h;
      std::memcpy(&h, p + i * 2, 2);
      return t == ternFloat16 ? halfToFloat(h) : bf16ToFloat(h);
    }
    case ternFloat32: {
      float v;
      std::memcpy(&v, p + i * 4, 4);
      return v;
    }
    default: {
      double v;
      std::memcpy(&v, p + i * 8, 8);
      return v;
    }
  }
}

// x modulo 2^bits of integer datatype t, as the signed or unsigned value of that width (64-bit types as they are:
// the checks keep them below 2^53, where a double holds them exactly).
inline int64_t wrapToType(int64_t x, ternDataType_t t) {
  const auto u = static_cast<uint64_t>(x);
  switch (t) {
    case ternInt8:
      return static_cast<int8_t>(static_cast<uint8_t>(u));
    case ternUint8:
      return static_cast<uint8_t>(u);
    case ternInt32:
      return static_cast<int32_t>(static_cast<uint32_t>(u));
    case ternUint32:
      return static_cast<uint32_t>(u);
    default:
      return x;
  }
}

// The value a reduction over n ranks must leave, given each rank's element (already in datatype t) in rank order.
// Floating point: exact in double for the small-integer inputs the checks use, rounded once; avg divides in fp32
// for fp16/bf16/fp32 (as the library documents) and in fp64 for fp64; max/min order -0 below +0. Integers: 64-bit
// arithmetic modulo 2^64, wrapped to the datatype's width, so 8- and 32-bit results are exact for any inputs; avg
// truncates toward zero.
inline double reduceValues(const double* values, int n, ternDataType_t t, ternRedOp_t op) {
  if (isFloating(t)) {
    double acc = values[0];
    for (int r = 1; r < n; ++r) {
      const double v = values[r];
      switch (op) {
        case ternProd:
          acc *= v;
          break;
        case ternMax:  // IEEE 754-2019 maximum: -0 < +0, as the library documents
          acc = (v > acc || (v == acc && !std::signbit(v))) ? v : acc;
          break;
        case ternMin:
          acc = (v < acc || (v == acc && std::signbit(v))) ? v : acc;
          break;
        default:
          acc += v;
          break;
      }
    }
    if (op == ternAvg) {
      if (t == ternFloat64) return acc / n;
      return static_cast<float>(acc) / static_cast<float>(n);
    }
    return acc;
  }
  // Integers: sums and products modulo 2^64 (then truncated to the datatype's width by store()), compared as the
  // signed or unsigned values they are.
  const auto asInt = [](double v) { return static_cast<int64_t>(v); };
  int64_t acc = asInt(values[0]);
  for (int r = 1; r < n; ++r) {
    const int64_t v = asInt(values[r]);
    switch (op) {
      case ternProd:
        acc = static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
        break;
      case ternMax:
        acc = v > acc ? v : acc;
        break;
      case ternMin:
        acc = v < acc ? v : acc;
        break;
      default:
        acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
        break;
    }
  }
  const int64_t wrapped = wrapToType(acc, t);
  // avg: the sum wraps in the datatype first, then divides, truncating (as the library's integer average does).
  return static_cast<double>(op == ternAvg ? wrapped / n : wrapped);
}

// count elements of datatype t, element i being value(i) rounded to t.
template <typename ValueOf>
std::vector<char> makeBuffer(size_t count, ternDataType_t t, ValueOf value) {
  std::vector<char> b(count * elementSize(t));
  for (size_t i = 0; i < count; ++i) store(b.data(), i, t, value(i));
  return b;
}

// The reference reduction of element range [offset, offset+count) over n ranks, rank r's element i being
// valueOf(r, i) rounded to t first (what that rank put in its buffer).
template <typename ValueOf>
std::vector<char> reduceBuffer(int n, size_t count, size_t offset, ternDataType_t t, ternRedOp_t op, ValueOf valueOf) {
  std::vector<char> out(count * elementSize(t));
  std::vector<double> vals(static_cast<size_t>(n));
  char one[8];
  for (size_t i = 0; i < count; ++i) {
    for (int r = 0; r < n; ++r) {
      store(one, 0, t, valueOf(r, offset + i));
      vals[static_cast<size_t>(r)] = load(one, 0, t);
    }
    store(out.data(), i, t, reduceValues(vals.data(), n, t, op));
  }
  return out;
}

}  // namespace tern::ref
