// Portable reference kernels: the definition that the SIMD paths must reproduce bit for bit (see
// reduce_dispatch.hpp for the rules). Elements are accessed through memcpy so that any byte alignment works.
#include <bit>
#include <cstring>
#include <type_traits>

#include "kernels/reduce.hpp"
#include "kernels/reduce_dispatch.hpp"

namespace tern::kernels {
namespace {

template <typename T>
T loadAt(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void storeAt(void* base, size_t i, T v) {
  std::memcpy(static_cast<unsigned char*>(base) + i * sizeof(T), &v, sizeof(T));
}

template <CombineOp kOp, typename T>
T combineInt(T a, T b) {
  // Wrapping arithmetic is done in the unsigned type of at least int width: signed overflow (and the promotion of
  // uint8 to int before a multiply) would be undefined.
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  if constexpr (kOp == CombineOp::kSum) {
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else if constexpr (kOp == CombineOp::kProd) {
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else if constexpr (kOp == CombineOp::kMax) {
    return a > b ? a : b;
  } else {
    return a < b ? a : b;
  }
}

template <typename F>
F canonicalNan() {
  if constexpr (std::is_same_v<F, float>) {
    return std::bit_cast<float>(kCanonicalNanF32);
  } else {
    return std::bit_cast<double>(kCanonicalNanF64);
  }
}

template <CombineOp kOp, typename F>
F combineFloat(F a, F b) {
  using Bits = std::conditional_t<std::is_same_v<F, float>, uint32_t, uint64_t>;
  F r;
  if constexpr (kOp == CombineOp::kSum) {
    r = a + b;
  } else if constexpr (kOp == CombineOp::kProd) {
    r = a * b;
  } else {
    if (a != a || b != b) return canonicalNan<F>();
    if (a > b) return kOp == CombineOp::kMax ? a : b;
    if (b > a) return kOp == CombineOp::kMax ? b : a;
    // Equal: identical bits, or +0 and -0, where max is +0 (AND of the bits) and min is -0 (OR).
    const Bits x = std::bit_cast<Bits>(a);
    const Bits y = std::bit_cast<Bits>(b);
    return std::bit_cast<F>(kOp == CombineOp::kMax ? (x & y) : (x | y));
  }
  return r != r ? canonicalNan<F>() : r;
}

template <typename T, CombineOp kOp>
void combineLoop(void* dst, const void* a, const void* b, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const T x = loadAt<T>(a, i);
    const T y = loadAt<T>(b, i);
    if constexpr (std::is_floating_point_v<T>) {
      storeAt<T>(dst, i, combineFloat<kOp>(x, y));
    } else {
      storeAt<T>(dst, i, combineInt<kOp>(x, y));
    }
  }
}

// fp16 and bf16: widen, combine in fp32, round back (ToF/FromF are the conversions).
template <CombineOp kOp, float (*kToF)(uint16_t), uint16_t (*kFromF)(float)>
void combineLoop16(void* dst, const void* a, const void* b, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const float x = kToF(loadAt<uint16_t>(a, i));
    const float y = kToF(loadAt<uint16_t>(b, i));
    storeAt<uint16_t>(dst, i, kFromF(combineFloat<kOp>(x, y)));
  }
}

template <CombineOp kOp>
void binaryForOp(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype) {
  switch (dtype) {
    case ternInt8:
      return combineLoop<int8_t, kOp>(dst, a, b, count);
    case ternUint8:
      return combineLoop<uint8_t, kOp>(dst, a, b, count);
    case ternInt32:
      return combineLoop<int32_t, kOp>(dst, a, b, count);
    case ternUint32:
      return combineLoop<uint32_t, kOp>(dst, a, b, count);
    case ternInt64:
      return combineLoop<int64_t, kOp>(dst, a, b, count);
    case ternUint64:
      return combineLoop<uint64_t, kOp>(dst, a, b, count);
    case ternFloat16:
      return combineLoop16<kOp, halfToFloat, floatToHalf>(dst, a, b, count);
    case ternFloat32:
      return combineLoop<float, kOp>(dst, a, b, count);
    case ternFloat64:
      return combineLoop<double, kOp>(dst, a, b, count);
    case ternBfloat16:
      return combineLoop16<kOp, bfloat16ToFloat, floatToBfloat16>(dst, a, b, count);
    default:
      return;
  }
}

void scalarBinary(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype, CombineOp op) {
  switch (op) {
    case CombineOp::kSum:
      return binaryForOp<CombineOp::kSum>(dst, a, b, count, dtype);
    case CombineOp::kProd:
      return binaryForOp<CombineOp::kProd>(dst, a, b, count, dtype);
    case CombineOp::kMax:
      return binaryForOp<CombineOp::kMax>(dst, a, b, count, dtype);
    case CombineOp::kMin:
      return binaryForOp<CombineOp::kMin>(dst, a, b, count, dtype);
  }
}

template <typename T>
void divideLoop(void* dst, size_t count, int divisor) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto d = static_cast<T>(divisor);
    for (size_t i = 0; i < count; ++i) storeAt<T>(dst, i, loadAt<T>(dst, i) / d);
  } else {
    // Truncating division in 64 bits: the divisor may not fit the element type (e.g. 200 ranks of int8), and a
    // positive divisor never overflows.
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    const auto d = static_cast<Wide>(divisor);
    for (size_t i = 0; i < count; ++i) storeAt<T>(dst, i, static_cast<T>(static_cast<Wide>(loadAt<T>(dst, i)) / d));
  }
}

template <float (*kToF)(uint16_t), uint16_t (*kFromF)(float)>
void divideLoop16(void* dst, size_t count, int divisor) {
  const auto d = static_cast<float>(divisor);
  for (size_t i = 0; i < count; ++i) storeAt<uint16_t>(dst, i, kFromF(kToF(loadAt<uint16_t>(dst, i)) / d));
}

bool scalarDivide(void* dst, size_t count, ternDataType_t dtype, int divisor) {
  switch (dtype) {
    case ternInt8:
      divideLoop<int8_t>(dst, count, divisor);
      return true;
    case ternUint8:
      divideLoop<uint8_t>(dst, count, divisor);
      return true;
    case ternInt32:
      divideLoop<int32_t>(dst, count, divisor);
      return true;
    case ternUint32:
      divideLoop<uint32_t>(dst, count, divisor);
      return true;
    case ternInt64:
      divideLoop<int64_t>(dst, count, divisor);
      return true;
    case ternUint64:
      divideLoop<uint64_t>(dst, count, divisor);
      return true;
    case ternFloat16:
      divideLoop16<halfToFloat, floatToHalf>(dst, count, divisor);
      return true;
    case ternFloat32:
      divideLoop<float>(dst, count, divisor);
      return true;
    case ternFloat64:
      divideLoop<double>(dst, count, divisor);
      return true;
    case ternBfloat16:
      divideLoop16<bfloat16ToFloat, floatToBfloat16>(dst, count, divisor);
      return true;
    default:
      return false;
  }
}

}  // namespace

const KernelTable& scalarKernels() {
  static constexpr KernelTable kTable{"scalar", scalarBinary, scalarDivide};
  return kTable;
}

}  // namespace tern::kernels
