// Tests of the reduction kernels: every SIMD path the CPU supports must equal the scalar reference bit for bit
// (special values, tails, aliasing, misalignment), the reference must give the hand-computed results, and the
// fp16/bf16 conversions must round to nearest even on every bit pattern.
#include <gtest/gtest.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "kernels/reduce.hpp"
#include "kernels/reduce_dispatch.hpp"

namespace tern {
namespace {

constexpr ternDataType_t kAllTypes[] = {ternInt8,   ternUint8,   ternInt32,   ternUint32,  ternInt64,
                                        ternUint64, ternFloat16, ternFloat32, ternFloat64, ternBfloat16};
constexpr ternRedOp_t kAllOps[] = {ternSum, ternProd, ternMax, ternMin, ternAvg};
constexpr size_t kCounts[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 1023, 1048579};

bool isFloatType(ternDataType_t t) {
  return t == ternFloat16 || t == ternFloat32 || t == ternFloat64 || t == ternBfloat16;
}

// Restores the automatic ISA choice when a test that forces one ends (even by a failed assertion).
struct IsaGuard {
  ~IsaGuard() { setReduceIsaForTesting(nullptr); }
};

// The ISAs this CPU runs, scalar first.
std::vector<std::string> supportedIsas() {
  IsaGuard guard;
  std::vector<std::string> out;
  for (const char* isa : {"scalar", "avx2", "avx512"}) {
    if (std::string(setReduceIsaForTesting(isa)) == isa) out.push_back(isa);
  }
  return out;
}

std::string hexOf(const uint8_t* p, size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (size_t i = size; i-- > 0;) {  // Little endian: most significant byte last.
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

// Compares element-wise and names the first differing element with its inputs.
::testing::AssertionResult sameBits(const void* got, const void* want, const void* a, const void* b, size_t count,
                                    size_t elem) {
  if (count == 0 || std::memcmp(got, want, count * elem) == 0) return ::testing::AssertionSuccess();
  const auto* g = static_cast<const uint8_t*>(got);
  const auto* w = static_cast<const uint8_t*>(want);
  size_t i = 0;
  while (std::memcmp(g + i * elem, w + i * elem, elem) == 0) ++i;
  return ::testing::AssertionFailure() << "element " << i << " of " << count
                                       << ": a=" << hexOf(static_cast<const uint8_t*>(a) + i * elem, elem)
                                       << " b=" << hexOf(static_cast<const uint8_t*>(b) + i * elem, elem)
                                       << " got=" << hexOf(g + i * elem, elem) << " want=" << hexOf(w + i * elem, elem);
}

// Random elements that hit every class of value: for floats, NaNs (quiet, signaling, negative), +-0, +-inf,
// subnormals, extremes, ordinary numbers of similar magnitude (so that rounding matters), and equal or negated
// pairs across a and b (max/min ties, +0 vs -0).
class DataGen {
 public:
  explicit DataGen(uint64_t seed) : rng_(seed) {}

  void fill(std::vector<uint8_t>& a, std::vector<uint8_t>& b, ternDataType_t dtype) {
    const size_t elem = dataTypeSize(dtype);
    randomBytes(a);
    randomBytes(b);
    if (!isFloatType(dtype)) return;
    const size_t n = a.size() / elem;
    for (size_t i = 0; i < n; ++i) {
      setElement(a.data() + i * elem, dtype);
      setElement(b.data() + i * elem, dtype);
      const unsigned pair = rng_() % 16;
      if (pair == 0) std::memcpy(b.data() + i * elem, a.data() + i * elem, elem);  // Equal.
      if (pair == 1) {                                                             // Negated: x and -x, +0/-0.
        std::memcpy(b.data() + i * elem, a.data() + i * elem, elem);
        b[i * elem + elem - 1] ^= 0x80;
      }
    }
  }

 private:
  void randomBytes(std::vector<uint8_t>& v) {
    for (size_t i = 0; i < v.size(); i += 8) {
      const uint64_t r = rng_();
      std::memcpy(v.data() + i, &r, std::min<size_t>(8, v.size() - i));
    }
  }

  void setElement(uint8_t* p, ternDataType_t dtype) {
    const unsigned kind = rng_() % 8;
    switch (dtype) {
      case ternFloat32: {
        const uint32_t v = kind < 2   ? special32()
                           : kind < 5 ? std::bit_cast<uint32_t>(ordinary<float>())
                                      : static_cast<uint32_t>(rng_());
        std::memcpy(p, &v, 4);
        return;
      }
      case ternFloat64: {
        const uint64_t v = kind < 2 ? special64() : kind < 5 ? std::bit_cast<uint64_t>(ordinary<double>()) : rng_();
        std::memcpy(p, &v, 8);
        return;
      }
      case ternFloat16:
      case ternBfloat16: {
        // Random 16-bit patterns already cover every class; add the specials at a higher rate.
        const bool half = dtype == ternFloat16;
        static const uint16_t kHalfSpecials[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe01,
                                                 0x0001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3c01};
        static const uint16_t kBfSpecials[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1,
                                               0x0001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3f80, 0x3f81};
        const uint16_t* specials = half ? kHalfSpecials : kBfSpecials;
        uint16_t v = static_cast<uint16_t>(rng_());
        if (kind < 2) v = specials[rng_() % 14];
        // Ordinary values between 0.5 and 2 in magnitude, where sums and products round.
        if (kind >= 2 && kind < 5) v = static_cast<uint16_t>((v & 0x80ffu) | (half ? 0x3800u : 0x3f00u));
        std::memcpy(p, &v, 2);
        return;
      }
      default:
        return;
    }
  }

  template <typename F>
  F ordinary() {
    return static_cast<F>(std::uniform_real_distribution<double>(-4.0, 4.0)(rng_));
  }

  uint32_t special32() {
    static const uint32_t kSpecials[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
                                         0x7f800001, 0x7fa00000, 0xff812345, 0x00000001, 0x80000001, 0x007fffff,
                                         0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000, 0x33800000};
    return kSpecials[rng_() % std::size(kSpecials)];
  }

  uint64_t special64() {
    static const uint64_t kSpecials[] = {0x0000000000000000, 0x8000000000000000, 0x7ff0000000000000, 0xfff0000000000000,
                                         0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001, 0x7ff4000000000000,
                                         0xfff0000012345678, 0x0000000000000001, 0x800fffffffffffff, 0x0010000000000000,
                                         0x7fefffffffffffff, 0x3ff0000000000000, 0xbff0000000000000};
    return kSpecials[rng_() % std::size(kSpecials)];
  }

  std::mt19937_64 rng_;
};

// Pointers into buffers with a few elements of slack, so that offsets break vector alignment and writes past the
// end are caught (the slack holds a sentinel).
constexpr size_t kSlack = 4;
constexpr uint8_t kSentinel = 0xa5;

bool sentinelIntact(const std::vector<uint8_t>& buf, const uint8_t* start, size_t bytes) {
  const size_t begin = static_cast<size_t>(start - buf.data());
  const auto notSentinel = [](uint8_t x) { return x != kSentinel; };
  return std::none_of(buf.begin(), buf.begin() + begin, notSentinel) &&
         std::none_of(buf.begin() + begin + bytes, buf.end(), notSentinel);
}

TEST(Reduce, MatchesScalarOnEveryIsa) {
  IsaGuard guard;
  const std::vector<std::string> isas = supportedIsas();
  DataGen gen(42);
  for (ternDataType_t dtype : kAllTypes) {
    const size_t elem = dataTypeSize(dtype);
    const size_t maxCount = kCounts[std::size(kCounts) - 1];
    std::vector<uint8_t> va((maxCount + kSlack) * elem), vb((maxCount + kSlack) * elem);
    gen.fill(va, vb, dtype);
    std::vector<uint8_t> want, out, inplace;
    for (size_t count : kCounts) {
      const size_t bytes = count * elem;
      const size_t offset = count % kSlack;  // Elements: different alignment for different counts.
      const uint8_t* a = va.data() + offset * elem;
      const uint8_t* b = vb.data() + ((offset + 1) % kSlack) * elem;
      for (ternRedOp_t op : kAllOps) {
        SCOPED_TRACE(std::string(dataTypeName(dtype)) + " " + redOpName(op) + " count " + std::to_string(count));
        want.assign(bytes, 0);
        reduceScalar(want.data(), a, b, count, dtype, op);
        for (const std::string& isa : isas) {
          // The scalar ISA runs reduceScalar's own loop: small counts cover its dispatch and aliasing.
          if (isa == "scalar" && count > 4096) continue;
          SCOPED_TRACE(isa);
          setReduceIsaForTesting(isa.c_str());
          out.assign((count + kSlack) * elem, kSentinel);
          uint8_t* d = out.data() + ((offset + 2) % kSlack) * elem;
          reduce(d, a, b, count, dtype, op);
          ASSERT_TRUE(sameBits(d, want.data(), a, b, count, elem));
          ASSERT_TRUE(sentinelIntact(out, d, bytes)) << "wrote outside dst";

          // dst == a, dst == b: in-place accumulation, the allreduce hot case.
          inplace.assign(a, a + bytes);
          reduce(inplace.data(), inplace.data(), b, count, dtype, op);
          ASSERT_TRUE(sameBits(inplace.data(), want.data(), a, b, count, elem)) << "dst == a";
          inplace.assign(b, b + bytes);
          reduce(inplace.data(), a, inplace.data(), count, dtype, op);
          ASSERT_TRUE(sameBits(inplace.data(), want.data(), a, b, count, elem)) << "dst == b";
        }
      }
    }
  }
}

TEST(Reduce, DstAliasingBothInputs) {
  IsaGuard guard;
  DataGen gen(7);
  for (ternDataType_t dtype : kAllTypes) {
    const size_t elem = dataTypeSize(dtype);
    const size_t count = 1001;
    std::vector<uint8_t> x(count * elem), unused(count * elem), want(count * elem), d;
    gen.fill(x, unused, dtype);
    for (ternRedOp_t op : kAllOps) {
      reduceScalar(want.data(), x.data(), x.data(), count, dtype, op);
      for (const std::string& isa : supportedIsas()) {
        SCOPED_TRACE(std::string(dataTypeName(dtype)) + " " + redOpName(op) + " " + isa);
        setReduceIsaForTesting(isa.c_str());
        d = x;
        reduce(d.data(), d.data(), d.data(), count, dtype, op);
        ASSERT_TRUE(sameBits(d.data(), want.data(), x.data(), x.data(), count, elem));
      }
    }
  }
}

TEST(Reduce, ByteMisalignedPointers) {
  IsaGuard guard;
  DataGen gen(11);
  for (ternDataType_t dtype : kAllTypes) {
    const size_t elem = dataTypeSize(dtype);
    for (size_t count : {size_t{77}, size_t{1023}}) {
      std::vector<uint8_t> va(count * elem + 8), vb(count * elem + 8), want(count * elem), out(count * elem + 8);
      gen.fill(va, vb, dtype);
      const uint8_t* a = va.data() + 1;
      const uint8_t* b = vb.data() + 3;
      uint8_t* d = out.data() + 5;
      for (ternRedOp_t op : kAllOps) {
        reduceScalar(want.data(), a, b, count, dtype, op);
        for (const std::string& isa : supportedIsas()) {
          SCOPED_TRACE(std::string(dataTypeName(dtype)) + " " + redOpName(op) + " " + isa);
          setReduceIsaForTesting(isa.c_str());
          reduce(d, a, b, count, dtype, op);
          ASSERT_TRUE(sameBits(d, want.data(), a, b, count, elem));
        }
      }
    }
  }
}

// Out-of-place outputs of kStreamingStoreBytes and more take the non-temporal store path, which first aligns dst:
// check it for every dtype with dst 64-byte aligned, one element past, one element short of the next 64 bytes, and
// byte-misaligned (which must fall back to ordinary stores).
TEST(Reduce, LargeOutOfPlaceStreamingPath) {
  IsaGuard guard;
  DataGen gen(13);
  for (ternDataType_t dtype : kAllTypes) {
    const size_t elem = dataTypeSize(dtype);
    const size_t count = kernels::kStreamingStoreBytes / elem + 37;
    std::vector<uint8_t> a(count * elem), b(count * elem), want(count * elem), out(count * elem + 128);
    gen.fill(a, b, dtype);
    for (ternRedOp_t op : {ternSum}) {  // The path is the same for every op.
      reduceScalar(want.data(), a.data(), b.data(), count, dtype, op);
      for (const std::string& isa : supportedIsas()) {
        if (isa == "scalar") continue;
        setReduceIsaForTesting(isa.c_str());
        for (size_t offset : {size_t{0}, elem, 64 - elem, size_t{1}}) {
          SCOPED_TRACE(std::string(dataTypeName(dtype)) + " " + redOpName(op) + " " + isa + " dst offset " +
                       std::to_string(offset));
          std::fill(out.begin(), out.end(), kSentinel);
          uint8_t* d = out.data() + (64 - reinterpret_cast<uintptr_t>(out.data()) % 64) % 64 + offset;
          reduce(d, a.data(), b.data(), count, dtype, op);
          ASSERT_TRUE(sameBits(d, want.data(), a.data(), b.data(), count, elem));
          ASSERT_TRUE(sentinelIntact(out, d, count * elem)) << "wrote outside dst";
        }
      }
    }
  }
}

// Float ops are commutative bit for bit (canonical NaN, IEEE maximum/minimum), so any reduction order agrees.
TEST(Reduce, FloatOpsAreCommutative) {
  IsaGuard guard;
  DataGen gen(3);
  for (ternDataType_t dtype : {ternFloat16, ternFloat32, ternFloat64, ternBfloat16}) {
    const size_t elem = dataTypeSize(dtype);
    const size_t count = 4099;
    std::vector<uint8_t> a(count * elem), b(count * elem), ab(count * elem), ba(count * elem);
    gen.fill(a, b, dtype);
    for (ternRedOp_t op : kAllOps) {
      for (const std::string& isa : supportedIsas()) {
        SCOPED_TRACE(std::string(dataTypeName(dtype)) + " " + redOpName(op) + " " + isa);
        setReduceIsaForTesting(isa.c_str());
        reduce(ab.data(), a.data(), b.data(), count, dtype, op);
        reduce(ba.data(), b.data(), a.data(), count, dtype, op);
        ASSERT_TRUE(sameBits(ab.data(), ba.data(), a.data(), b.data(), count, elem));
      }
    }
  }
}

// Max/min are also associative bit for bit, NaN and signed zeros included: (a op b) op c == a op (b op c).
TEST(Reduce, FloatMaxMinAreAssociative) {
  IsaGuard guard;
  DataGen gen(17);
  for (ternDataType_t dtype : {ternFloat16, ternFloat32, ternFloat64, ternBfloat16}) {
    const size_t elem = dataTypeSize(dtype);
    const size_t count = 4099;
    std::vector<uint8_t> a(count * elem), b(count * elem), c(count * elem), unused(count * elem);
    gen.fill(a, b, dtype);
    gen.fill(c, unused, dtype);
    std::memcpy(c.data(), b.data(), count * elem / 4);  // Some triples with b == c.
    std::vector<uint8_t> left(count * elem), right(count * elem);
    for (ternRedOp_t op : {ternMax, ternMin}) {
      for (const std::string& isa : supportedIsas()) {
        SCOPED_TRACE(std::string(dataTypeName(dtype)) + " " + redOpName(op) + " " + isa);
        setReduceIsaForTesting(isa.c_str());
        reduce(left.data(), a.data(), b.data(), count, dtype, op);
        reduce(left.data(), left.data(), c.data(), count, dtype, op);
        reduce(right.data(), b.data(), c.data(), count, dtype, op);
        reduce(right.data(), a.data(), right.data(), count, dtype, op);
        ASSERT_TRUE(sameBits(left.data(), right.data(), a.data(), b.data(), count, elem));
      }
    }
  }
}

template <size_t kSize>
struct UintOfSize;
template <>
struct UintOfSize<1> {
  using type = uint8_t;
};
template <>
struct UintOfSize<2> {
  using type = uint16_t;
};
template <>
struct UintOfSize<4> {
  using type = uint32_t;
};
template <>
struct UintOfSize<8> {
  using type = uint64_t;
};

// The bits of a value, widened for printing.
template <typename T>
uint64_t bitsOf(T v) {
  return std::bit_cast<typename UintOfSize<sizeof(T)>::type>(v);
}

// Runs reduce on every ISA over the pattern repeated to 67 copies (so that the vector body and the tail both see
// it) and checks each element against the expected pattern.
template <typename T>
void expectReduce(ternDataType_t dtype, ternRedOp_t op, const std::vector<T>& a, const std::vector<T>& b,
                  const std::vector<T>& want) {
  IsaGuard guard;
  const size_t n = a.size() * 67;
  std::vector<T> ra(n), rb(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    ra[i] = a[i % a.size()];
    rb[i] = b[i % b.size()];
  }
  for (const std::string& isa : supportedIsas()) {
    setReduceIsaForTesting(isa.c_str());
    reduce(out.data(), ra.data(), rb.data(), n, dtype, op);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(bitsOf(out[i]), bitsOf(want[i % want.size()]))
          << std::hex << dataTypeName(dtype) << " " << redOpName(op) << " " << isa << " element " << std::dec << i;
    }
  }
}

TEST(Reduce, IntegerKnownValues) {
  // Sum and prod wrap; max/min respect signedness.
  expectReduce<int8_t>(ternInt8, ternSum, {100, -128, 127, 5}, {100, -1, 1, -7}, {-56, 127, -128, -2});
  expectReduce<int8_t>(ternInt8, ternAvg, {100, -128}, {100, -1}, {-56, 127});
  expectReduce<int8_t>(ternInt8, ternProd, {16, -128, 3, -3}, {16, -1, 100, 5}, {0, -128, 44, -15});
  expectReduce<int8_t>(ternInt8, ternMax, {-56, -128, 0}, {100, 127, -1}, {100, 127, 0});
  expectReduce<int8_t>(ternInt8, ternMin, {-56, -128, 0}, {100, 127, -1}, {-56, -128, -1});
  expectReduce<uint8_t>(ternUint8, ternSum, {200, 255}, {100, 1}, {44, 0});
  expectReduce<uint8_t>(ternUint8, ternProd, {16, 255, 3}, {16, 255, 100}, {0, 1, 44});
  expectReduce<uint8_t>(ternUint8, ternMax, {200, 0}, {100, 255}, {200, 255});
  expectReduce<uint8_t>(ternUint8, ternMin, {200, 0}, {100, 255}, {100, 0});

  constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
  constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
  expectReduce<int32_t>(ternInt32, ternSum, {kI32Max, -5}, {1, 3}, {kI32Min, -2});
  expectReduce<int32_t>(ternInt32, ternProd, {65536, -3, kI32Min}, {65536, 5, -1}, {0, -15, kI32Min});
  expectReduce<int32_t>(ternInt32, ternMax, {kI32Min, -1}, {1, -2}, {1, -1});
  expectReduce<int32_t>(ternInt32, ternMin, {kI32Min, -1}, {1, -2}, {kI32Min, -2});
  expectReduce<uint32_t>(ternUint32, ternSum, {0xffffffffu}, {2}, {1});
  expectReduce<uint32_t>(ternUint32, ternProd, {0xffffffffu, 0x10000u}, {0xffffffffu, 0x10000u}, {1, 0});
  expectReduce<uint32_t>(ternUint32, ternMax, {0x80000000u, 3}, {1, 4}, {0x80000000u, 4});
  expectReduce<uint32_t>(ternUint32, ternMin, {0x80000000u, 3}, {1, 4}, {1, 3});

  constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
  constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
  expectReduce<int64_t>(ternInt64, ternSum, {kI64Max, -5}, {1, 3}, {kI64Min, -2});
  // (2^32+1)^2 = 2^64 + 2^33 + 1; the signed cases check the cross terms of the emulated 64-bit multiply.
  expectReduce<int64_t>(ternInt64, ternProd, {0x100000001, -3, -0x123456789, kI64Min},
                        {0x100000001, 5, 0x987654321, -1},
                        {0x200000001, -15, static_cast<int64_t>(0x28828bd331e7cc57ull), kI64Min});
  expectReduce<int64_t>(ternInt64, ternMax, {-1, kI64Min, 0x100000000}, {1, kI64Max, 0xffffffff},
                        {1, kI64Max, 0x100000000});
  expectReduce<int64_t>(ternInt64, ternMin, {-1, kI64Min, 0x100000000}, {1, kI64Max, 0xffffffff},
                        {-1, kI64Min, 0xffffffff});
  constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
  expectReduce<uint64_t>(ternUint64, ternSum, {kU64Max}, {2}, {1});
  expectReduce<uint64_t>(ternUint64, ternProd, {kU64Max, 0xffffffff}, {kU64Max, 0xffffffff},
                         {1, 0xfffffffe00000001ull});
  expectReduce<uint64_t>(ternUint64, ternMax, {kU64Max, 0x8000000000000000ull}, {1, 0x7fffffffffffffffull},
                         {kU64Max, 0x8000000000000000ull});
  expectReduce<uint64_t>(ternUint64, ternMin, {kU64Max, 0x8000000000000000ull}, {1, 0x7fffffffffffffffull},
                         {1, 0x7fffffffffffffffull});
}

float f32(uint32_t bits) { return std::bit_cast<float>(bits); }
double f64(uint64_t bits) { return std::bit_cast<double>(bits); }

TEST(Reduce, FloatKnownValues) {
  const float nan = f32(kernels::kCanonicalNanF32);
  const float inf = std::numeric_limits<float>::infinity();
  const float snan = f32(0x7f800001);
  const float negNan = f32(0xffc12345);
  const float tiny = f32(0x00000001);  // Smallest subnormal: no flush to zero.
  expectReduce<float>(ternFloat32, ternSum, {1.0f, inf, snan, negNan, tiny, 3e38f, -0.0f},
                      {2.0f, -inf, 1.0f, negNan, tiny, 3e38f, -0.0f}, {3.0f, nan, nan, nan, f32(2), inf, -0.0f});
  expectReduce<float>(ternFloat32, ternProd, {3.0f, 0.0f, -2.0f, snan}, {0.5f, inf, 0.0f, 0.0f},
                      {1.5f, nan, -0.0f, nan});
  // Max/min: NaN wins (canonical), -0 < +0 in either order.
  expectReduce<float>(ternFloat32, ternMax, {-0.0f, 0.0f, snan, 1.0f, -inf, 2.0f, negNan},
                      {0.0f, -0.0f, 1.0f, negNan, tiny, 1.0f, inf}, {0.0f, 0.0f, nan, nan, tiny, 2.0f, nan});
  expectReduce<float>(ternFloat32, ternMin, {-0.0f, 0.0f, snan, 1.0f, -inf, 2.0f, -0.0f},
                      {0.0f, -0.0f, 1.0f, negNan, tiny, 1.0f, -0.0f}, {-0.0f, -0.0f, nan, nan, -inf, 1.0f, -0.0f});

  const double dnan = f64(kernels::kCanonicalNanF64);
  const double dinf = std::numeric_limits<double>::infinity();
  expectReduce<double>(ternFloat64, ternSum, {1.0, dinf, f64(0x7ff0000000000001), 1e308}, {2.0, -dinf, 1.0, 1e308},
                       {3.0, dnan, dnan, dinf});
  expectReduce<double>(ternFloat64, ternProd, {3.0, 0.0}, {0.5, -dinf}, {1.5, dnan});
  expectReduce<double>(ternFloat64, ternMax, {-0.0, 0.0, dnan, 1.0}, {0.0, -0.0, 1.0, 2.0}, {0.0, 0.0, dnan, 2.0});
  expectReduce<double>(ternFloat64, ternMin, {-0.0, 0.0, 1.0, 1.0}, {0.0, -0.0, dnan, 2.0}, {-0.0, -0.0, dnan, 1.0});
}

TEST(Reduce, HalfKnownValues) {
  // 1 + 2^-11 is a tie between 1 and 1+2^-10: even wins (1). 1 + 3*2^-11 ties to the even 1 + 2^-9.
  // 65504 + 65504 overflows to inf; inf - inf is the canonical NaN; subnormal products round to even.
  expectReduce<uint16_t>(ternFloat16, ternSum, {0x3c00, 0x3c00, 0x7bff, 0x7c00, 0x0001, 0x7c01},
                         {0x1000, 0x1600, 0x7bff, 0xfc00, 0x0001, 0x3c00},
                         {0x3c00, 0x3c02, 0x7c00, 0x7e00, 0x0002, 0x7e00});
  // 2^-24 * 0.5 = 2^-25 ties to 0; 3*2^-24 * 0.5 ties to the even 2*2^-24; 2^-14 * 0.5 is the subnormal 0x0200.
  expectReduce<uint16_t>(ternFloat16, ternProd, {0x0001, 0x0003, 0x0400, 0xbc00}, {0x3800, 0x3800, 0x3800, 0x0000},
                         {0x0000, 0x0002, 0x0200, 0x8000});
  expectReduce<uint16_t>(ternFloat16, ternMax, {0x8000, 0x0000, 0x7d00, 0xfc00}, {0x0000, 0x8000, 0x3c00, 0x0001},
                         {0x0000, 0x0000, 0x7e00, 0x0001});
  expectReduce<uint16_t>(ternFloat16, ternMin, {0x8000, 0x0000, 0x3c00, 0xfc00}, {0x0000, 0x8000, 0xfe01, 0x0001},
                         {0x8000, 0x8000, 0x7e00, 0xfc00});
}

TEST(Reduce, Bfloat16KnownValues) {
  // 1 + 2^-8 ties to 1; 1 + 3*2^-8 ties to the even 1 + 2^-6; max finite doubled overflows to inf.
  expectReduce<uint16_t>(ternBfloat16, ternSum, {0x3f80, 0x3f80, 0x7f7f, 0x7f80, 0x0001},
                         {0x3b80, 0x3c40, 0x7f7f, 0xff80, 0x0001}, {0x3f80, 0x3f82, 0x7f80, 0x7fc0, 0x0002});
  expectReduce<uint16_t>(ternBfloat16, ternProd, {0x3fc0, 0x3f81}, {0x3fc0, 0x3f81}, {0x4010, 0x3f82});
  expectReduce<uint16_t>(ternBfloat16, ternMax, {0x8000, 0x7f81, 0x3f80}, {0x0000, 0x3f80, 0xffc1},
                         {0x0000, 0x7fc0, 0x7fc0});
  expectReduce<uint16_t>(ternBfloat16, ternMin, {0x8000, 0x4000}, {0x0000, 0x3f80}, {0x8000, 0x3f80});
}

// ---- conversions ----

bool isHalfNan(uint16_t h) { return (h & 0x7fff) > 0x7c00; }
bool isBf16Nan(uint16_t b) { return (b & 0x7fff) > 0x7f80; }

TEST(Reduce, HalfToFloatMatchesDefinitionOnAllBitPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    const float f = halfToFloat(static_cast<uint16_t>(h));
    if (exponent == 0x1f) {
      if (mantissa == 0) {
        EXPECT_EQ(f, static_cast<float>(sign * HUGE_VAL)) << std::hex << h;
      } else {  // NaN: payload kept at the top of the fp32 mantissa, quiet bit set, sign kept.
        EXPECT_EQ(std::bit_cast<uint32_t>(f),
                  ((h & 0x8000u) << 16) | 0x7fc00000u | (static_cast<uint32_t>(mantissa) << 13))
            << std::hex << h;
      }
      continue;
    }
    const double want =
        exponent == 0 ? sign * std::ldexp(mantissa, -24) : sign * std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
    EXPECT_EQ(static_cast<double>(f), want) << std::hex << h;
    EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
  }
}

TEST(Reduce, HalfRoundTripsAllBitPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = floatToHalf(halfToFloat(static_cast<uint16_t>(h)));
    if (isHalfNan(static_cast<uint16_t>(h))) {
      EXPECT_EQ(back, h | 0x0200u) << std::hex << h;  // Stays NaN, payload and sign kept, quieted.
    } else {
      EXPECT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(Reduce, Bfloat16RoundTripsAllBitPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    EXPECT_EQ(std::bit_cast<uint32_t>(bfloat16ToFloat(static_cast<uint16_t>(b))), b << 16);
    const uint16_t back = floatToBfloat16(bfloat16ToFloat(static_cast<uint16_t>(b)));
    if (isBf16Nan(static_cast<uint16_t>(b))) {
      EXPECT_EQ(back, b | 0x0040u) << std::hex << b;
    } else {
      EXPECT_EQ(back, b) << std::hex << b;
    }
  }
}

// Reference rounding: the nearest of the two representable neighbours, ties to the even bit pattern. lo and hi
// are consecutive magnitudes (as bit patterns) around x, with values vlo <= x < vhi.
uint32_t nearestEven(double x, uint32_t lo, double vlo, double vhi) {
  const double dlo = x - vlo;
  const double dhi = vhi - x;
  if (dlo < dhi) return lo;
  if (dhi < dlo) return lo + 1;
  return (lo & 1) ? lo + 1 : lo;
}

// A float's neighbours among positive halves, by binary search over the (monotonic) bit patterns 0..0x7bff.
uint16_t referenceFloatToHalf(float f) {
  const double x = std::fabs(static_cast<double>(f));
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (x >= 65520.0) return sign | 0x7c00;  // 65504 + half an ulp (16) and above round to inf.
  uint32_t lo = 0, hi = 0x7bff;            // Largest h with value(h) <= x.
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (halfToFloat(static_cast<uint16_t>(mid)) <= x) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const double vlo = halfToFloat(static_cast<uint16_t>(lo));
  const double vhi = lo == 0x7bff ? 65536.0 : halfToFloat(static_cast<uint16_t>(lo + 1));
  return static_cast<uint16_t>(sign | nearestEven(x, lo, vlo, vhi));
}

// Float bit patterns that probe every rounding position: all values of the top 20 bits in a range, with low bits
// that make exact ties, just-below and just-above ties, and random ones.
template <class Check>
void forProbeFloats(uint32_t firstPrefix, uint32_t lastPrefix, Check check) {
  std::mt19937 rng(5);
  static const uint32_t kLow[] = {0x000, 0x001, 0x7ff, 0x800, 0x801, 0xfff};
  for (uint32_t prefix = firstPrefix; prefix <= lastPrefix; ++prefix) {
    for (uint32_t low : kLow) check(std::bit_cast<float>((prefix << 12) | low));
    check(std::bit_cast<float>((prefix << 12) | static_cast<uint32_t>(rng() & 0xfff)));
  }
}

TEST(Reduce, FloatToHalfRoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // Tie between 0 and the smallest subnormal.
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 units ties to the even 2.
  EXPECT_EQ(floatToHalf(std::ldexp(5.0f, -25)), 0x0002);     // 2.5 units ties to the even 2.
  EXPECT_EQ(floatToHalf(std::ldexp(1023.5f, -24)), 0x0400);  // Rounds up into the smallest normal.
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(f32(0x00000001)), 0x0000);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalf(f32(0x7f800001)), 0x7e00);  // Payload only in the dropped bits: still NaN.
  EXPECT_EQ(floatToHalf(f32(0xffa00000)), 0xfe00 | 0x100);
  // Everything from below half the smallest subnormal to past the overflow threshold, both signs.
  forProbeFloats(0x32000, 0x47800, [](float f) {
    ASSERT_EQ(floatToHalf(f), referenceFloatToHalf(f)) << std::hex << std::bit_cast<uint32_t>(f);
    ASSERT_EQ(floatToHalf(-f), referenceFloatToHalf(-f)) << std::hex << std::bit_cast<uint32_t>(-f);
  });
}

uint16_t referenceFloatToBfloat16(float f) {
  const double x = std::fabs(static_cast<double>(f));
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t lo = (bits >> 16) & 0x7fff;
  const int exponentField = static_cast<int>(lo >> 7);
  const double ulp = std::ldexp(1.0, std::max(exponentField, 1) - 127 - 7);
  const double vlo = std::fabs(static_cast<double>(bfloat16ToFloat(static_cast<uint16_t>(lo))));
  return static_cast<uint16_t>((bits >> 16 & 0x8000) | nearestEven(x, lo, vlo, vlo + ulp));
}

TEST(Reduce, FloatToBfloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(f32(0x3f808000)), 0x3f80);  // Tie, even stays.
  EXPECT_EQ(floatToBfloat16(f32(0x3f818000)), 0x3f82);  // Tie, odd rounds up.
  EXPECT_EQ(floatToBfloat16(f32(0x3f808001)), 0x3f81);
  EXPECT_EQ(floatToBfloat16(f32(0x7f7fffff)), 0x7f80);  // Max float rounds to inf.
  EXPECT_EQ(floatToBfloat16(f32(0x00008000)), 0x0000);  // Subnormal tie to even zero.
  EXPECT_EQ(floatToBfloat16(f32(0x80018000)), 0x8002);
  EXPECT_EQ(floatToBfloat16(f32(0x7f800001)), 0x7fc0);  // NaN with its payload in the dropped bits.
  EXPECT_EQ(floatToBfloat16(f32(0xffffffff)), 0xffff);
  for (uint32_t prefix = 0; prefix < 0x7f80; ++prefix) {  // Every finite magnitude's rounding, both signs.
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, (prefix * 2654435761u) & 0xffffu}) {
      const float f = std::bit_cast<float>((prefix << 16) | low);
      ASSERT_EQ(floatToBfloat16(f), referenceFloatToBfloat16(f)) << std::hex << std::bit_cast<uint32_t>(f);
      ASSERT_EQ(floatToBfloat16(-f), referenceFloatToBfloat16(-f)) << std::hex << std::bit_cast<uint32_t>(-f);
    }
  }
}

#if defined(__x86_64__)
// The hardware conversions, for the check below (the test binary is built without -mf16c).
__attribute__((target("f16c"))) float f16cToFloat(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t f16cFromFloat(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }

// The scalar conversions must equal F16C bit for bit, NaN payloads included, since the SIMD kernels use F16C.
TEST(Reduce, HalfConversionsMatchF16c) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C";
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(std::bit_cast<uint32_t>(halfToFloat(static_cast<uint16_t>(h))),
              std::bit_cast<uint32_t>(f16cToFloat(static_cast<uint16_t>(h))))
        << std::hex << h;
  }
  // The range where halves round (subnormal ties to overflow), and the NaNs, both signs.
  const auto check = [](float f) {
    ASSERT_EQ(floatToHalf(f), f16cFromFloat(f)) << std::hex << std::bit_cast<uint32_t>(f);
    ASSERT_EQ(floatToHalf(-f), f16cFromFloat(-f)) << std::hex << std::bit_cast<uint32_t>(-f);
  };
  forProbeFloats(0x32000, 0x47800, check);
  forProbeFloats(0x7f800, 0x7ffff, check);
}
#endif

// ---- finalizeAverage ----

// finalizeAverage on every ISA must equal the scalar ISA; over all 16-bit patterns this also checks that the
// F16C/vector conversions agree with halfToFloat/floatToHalf, NaN payloads included.
void expectFinalizeMatchesScalar(ternDataType_t dtype, const std::vector<uint8_t>& data, int divisor) {
  IsaGuard guard;
  const size_t elem = dataTypeSize(dtype);
  const size_t count = data.size() / elem;
  setReduceIsaForTesting("scalar");
  std::vector<uint8_t> want = data;
  finalizeAverage(want.data(), count, dtype, divisor);
  for (const std::string& isa : supportedIsas()) {
    SCOPED_TRACE(std::string(dataTypeName(dtype)) + " / " + std::to_string(divisor) + " " + isa);
    setReduceIsaForTesting(isa.c_str());
    std::vector<uint8_t> got = data;
    finalizeAverage(got.data(), count, dtype, divisor);
    ASSERT_TRUE(sameBits(got.data(), want.data(), data.data(), data.data(), count, elem));
  }
}

TEST(Reduce, FinalizeAverageMatchesScalarOnEveryIsa) {
  std::vector<uint8_t> all16(65536 * 2);
  for (uint32_t i = 0; i < 65536; ++i) std::memcpy(all16.data() + 2 * i, &i, 2);
  DataGen gen(9);
  for (int divisor : {1, 3, 7, 200}) {
    expectFinalizeMatchesScalar(ternFloat16, all16, divisor);
    expectFinalizeMatchesScalar(ternBfloat16, all16, divisor);
    for (ternDataType_t dtype : kAllTypes) {
      for (size_t count : {size_t{1}, size_t{17}, size_t{1023}, size_t{4101}}) {
        std::vector<uint8_t> a(count * dataTypeSize(dtype)), unused(a.size());
        gen.fill(a, unused, dtype);
        expectFinalizeMatchesScalar(dtype, a, divisor);
      }
    }
  }
}

template <typename T>
void expectFinalize(ternDataType_t dtype, int divisor, const std::vector<T>& values, const std::vector<T>& want) {
  IsaGuard guard;
  for (const std::string& isa : supportedIsas()) {
    setReduceIsaForTesting(isa.c_str());
    std::vector<T> v;
    for (int copy = 0; copy < 67; ++copy) v.insert(v.end(), values.begin(), values.end());
    finalizeAverage(v.data(), v.size(), dtype, divisor);
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(bitsOf(v[i]), bitsOf(want[i % want.size()]))
          << dataTypeName(dtype) << " / " << divisor << " " << isa << " element " << i;
    }
  }
}

TEST(Reduce, FinalizeAverageIntegersTruncate) {
  expectFinalize<int8_t>(ternInt8, 2, {-7, 7, -128, 127}, {-3, 3, -64, 63});
  expectFinalize<int8_t>(ternInt8, 200, {-128, 127}, {0, 0});  // Divisor wider than the type.
  expectFinalize<uint8_t>(ternUint8, 2, {255, 1}, {127, 0});
  expectFinalize<int32_t>(ternInt32, 3, {std::numeric_limits<int32_t>::min(), -5}, {-715827882, -1});
  expectFinalize<uint32_t>(ternUint32, 3, {0xffffffffu}, {0x55555555u});
  expectFinalize<int64_t>(ternInt64, 7, {std::numeric_limits<int64_t>::min(), -13}, {-1317624576693539401, -1});
  expectFinalize<uint64_t>(ternUint64, 3, {std::numeric_limits<uint64_t>::max()}, {0x5555555555555555ull});
}

TEST(Reduce, FinalizeAverageFloatsDivide) {
  const float inf = std::numeric_limits<float>::infinity();
  expectFinalize<float>(ternFloat32, 3, {1.0f, 10.0f, inf, -0.0f, f32(0x7fc12345)},
                        {1.0f / 3.0f, 10.0f / 3.0f, inf, -0.0f, f32(0x7fc12345)});
  expectFinalize<double>(ternFloat64, 3, {1.0, -7.0}, {1.0 / 3.0, -7.0 / 3.0});
  // 1/3 in half is 0x3555; in bf16, fp32 1/3 = 0x3eaaaaab rounds up to 0x3eab.
  expectFinalize<uint16_t>(ternFloat16, 3, {0x3c00, 0x7bff, 0x0001}, {0x3555, 0x7555, 0x0000});
  expectFinalize<uint16_t>(ternBfloat16, 3, {0x3f80, 0x7f80, 0x7f81}, {0x3eab, 0x7f80, 0x7fc1});
}

// ---- dispatch and argument checks ----

TEST(Reduce, IsaSelectionHonoursEnvironmentAndClamps) {
  // Run from a clean environment; restore the caller's TERN_REDUCE_ISA afterwards.
  const char* outer = std::getenv("TERN_REDUCE_ISA");
  const std::string saved = outer != nullptr ? outer : "";
  ASSERT_EQ(unsetenv("TERN_REDUCE_ISA"), 0);
  struct Restore {
    std::string value;
    ~Restore() {
      if (!value.empty()) setenv("TERN_REDUCE_ISA", value.c_str(), 1);
    }
  } restore{saved};
  IsaGuard guard;
  const std::vector<std::string> isas = supportedIsas();
  const std::string best = isas.back();
  EXPECT_EQ(std::string(setReduceIsaForTesting(nullptr)), best);
  EXPECT_EQ(std::string(reduceIsaName()), best);
  EXPECT_EQ(std::string(setReduceIsaForTesting("avx512")), best);  // Never above what the CPU supports.
  EXPECT_EQ(std::string(setReduceIsaForTesting("scalar")), "scalar");
  EXPECT_EQ(std::string(reduceIsaName()), "scalar");
  ASSERT_EQ(setenv("TERN_REDUCE_ISA", "scalar", 1), 0);
  EXPECT_EQ(std::string(setReduceIsaForTesting(nullptr)), "scalar");
  ASSERT_EQ(setenv("TERN_REDUCE_ISA", "avx512", 1), 0);
  EXPECT_EQ(std::string(setReduceIsaForTesting(nullptr)), best);
  ASSERT_EQ(unsetenv("TERN_REDUCE_ISA"), 0);
  EXPECT_EQ(std::string(setReduceIsaForTesting(nullptr)), best);
}

TEST(Reduce, RejectsInvalidArguments) {
  float x = 1.0f;
  EXPECT_THROW(reduce(&x, &x, &x, 1, static_cast<ternDataType_t>(ternNumTypes), ternSum), Error);
  EXPECT_THROW(reduce(&x, &x, &x, 1, ternFloat32, static_cast<ternRedOp_t>(ternNumOps)), Error);
  EXPECT_THROW(finalizeAverage(&x, 1, ternFloat32, 0), Error);
  EXPECT_NO_THROW(reduce(nullptr, nullptr, nullptr, 0, ternFloat32, ternSum));  // Empty: pointers unused.
}

}  // namespace
}  // namespace tern
