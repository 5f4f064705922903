// AVX2 + F16C kernels. The library is built without -mavx2, so every function that uses the intrinsics carries the
// target attribute, and nothing here runs unless the dispatcher saw the CPU support it. Results equal the scalar
// reference bit for bit (rules in reduce_dispatch.hpp); partial steps reuse the vector code on a zero-padded copy.
#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/reduce_dispatch.hpp"

// Not an error-handling macro: the one target string every function in this file needs.
#define TERN_AVX2 __attribute__((target("avx2,f16c")))

namespace tern::kernels {
namespace {

constexpr size_t kVec = 32;  // Bytes per step.

// ---- loads, and stores that are ordinary or non-temporal (aligned, bypassing the caches) ----

TERN_AVX2 inline __m256i loadI(const unsigned char* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
TERN_AVX2 inline __m256 loadPs(const unsigned char* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
TERN_AVX2 inline __m256d loadPd(const unsigned char* p) { return _mm256_loadu_pd(reinterpret_cast<const double*>(p)); }
TERN_AVX2 inline __m256 loadHalves(const unsigned char* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <bool kNt>
TERN_AVX2 inline void put(unsigned char* p, __m256i v) {
  if constexpr (kNt) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
}
template <bool kNt>
TERN_AVX2 inline void put(unsigned char* p, __m128i v) {
  if constexpr (kNt) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
  }
}
template <bool kNt>
TERN_AVX2 inline void put(unsigned char* p, __m256 v) {
  put<kNt>(p, _mm256_castps_si256(v));
}
template <bool kNt>
TERN_AVX2 inline void put(unsigned char* p, __m256d v) {
  put<kNt>(p, _mm256_castpd_si256(v));
}
// 8 fp32 values rounded (to nearest even) to 8 halves.
template <bool kNt>
TERN_AVX2 inline void putHalves(unsigned char* p, __m256 v) {
  put<kNt>(p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// ---- the loop: whole steps, four per iteration, then the last partial step on a zero-padded copy ----

template <bool kNt, class Step>
TERN_AVX2 size_t runWholeSteps(unsigned char* d, const unsigned char* x, const unsigned char* y, size_t bytes,
                               const Step& step) {
  size_t i = 0;
  for (; i + 4 * kVec <= bytes; i += 4 * kVec) {
    step.template apply<kNt>(d + i, x + i, y + i);
    step.template apply<kNt>(d + i + kVec, x + i + kVec, y + i + kVec);
    step.template apply<kNt>(d + i + 2 * kVec, x + i + 2 * kVec, y + i + 2 * kVec);
    step.template apply<kNt>(d + i + 3 * kVec, x + i + 3 * kVec, y + i + 3 * kVec);
  }
  for (; i + kVec <= bytes; i += kVec) step.template apply<kNt>(d + i, x + i, y + i);
  return i;
}

template <class Step>
TERN_AVX2 void runPartialStep(unsigned char* d, const unsigned char* x, const unsigned char* y, size_t bytes,
                              const Step& step) {
  // Both inputs are copied before dst is written, so aliasing stays safe.
  alignas(kVec) unsigned char ta[kVec] = {}, tb[kVec] = {}, td[kVec];
  std::memcpy(ta, x, bytes);
  std::memcpy(tb, y, bytes);
  step.template apply<false>(td, ta, tb);
  std::memcpy(d, td, bytes);
}

// elem is the element size: the non-temporal path first aligns dst, which must take whole elements.
template <class Step>
TERN_AVX2 void runSteps(void* dst, const void* a, const void* b, size_t bytes, size_t elem, const Step& step) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  const size_t misalignment = reinterpret_cast<uintptr_t>(d) % kVec;
  size_t done;
  if (useStreamingStores(dst, a, b, bytes) && misalignment % elem == 0) {
    const size_t head = std::min((kVec - misalignment) % kVec, bytes);
    if (head != 0) runPartialStep(d, x, y, head, step);
    done = head + runWholeSteps<true>(d + head, x + head, y + head, bytes - head, step);
    _mm_sfence();  // Streaming stores are weakly ordered: complete them before whatever publishes dst.
  } else {
    done = runWholeSteps<false>(d, x, y, bytes, step);
  }
  if (done < bytes) runPartialStep(d + done, x + done, y + done, bytes - done, step);
}

// ---- floating point ----

template <CombineOp kOp>
TERN_AVX2 inline __m256 combinePs(__m256 a, __m256 b) {
  const __m256 nan = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kCanonicalNanF32)));
  if constexpr (kOp == CombineOp::kSum || kOp == CombineOp::kProd) {
    const __m256 r = kOp == CombineOp::kSum ? _mm256_add_ps(a, b) : _mm256_mul_ps(a, b);
    return _mm256_blendv_ps(r, nan, _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
  } else {
    // maxps(x, y) is x > y ? x : y. Taken both ways round, the results agree unless the inputs are equal (then
    // AND/OR of the two picks +0 for max, -0 for min) or one is NaN (fixed up by the blend).
    const __m256 r = kOp == CombineOp::kMax ? _mm256_and_ps(_mm256_max_ps(a, b), _mm256_max_ps(b, a))
                                            : _mm256_or_ps(_mm256_min_ps(a, b), _mm256_min_ps(b, a));
    return _mm256_blendv_ps(r, nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
}

template <CombineOp kOp>
TERN_AVX2 inline __m256d combinePd(__m256d a, __m256d b) {
  const __m256d nan = _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(kCanonicalNanF64)));
  if constexpr (kOp == CombineOp::kSum || kOp == CombineOp::kProd) {
    const __m256d r = kOp == CombineOp::kSum ? _mm256_add_pd(a, b) : _mm256_mul_pd(a, b);
    return _mm256_blendv_pd(r, nan, _mm256_cmp_pd(r, r, _CMP_UNORD_Q));
  } else {
    const __m256d r = kOp == CombineOp::kMax ? _mm256_and_pd(_mm256_max_pd(a, b), _mm256_max_pd(b, a))
                                             : _mm256_or_pd(_mm256_min_pd(a, b), _mm256_min_pd(b, a));
    return _mm256_blendv_pd(r, nan, _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
  }
}

// fp32 -> bf16 with round-to-nearest-even, left in the upper 16 bits of each lane (lower bits are garbage). With
// kQuietNans, NaN keeps its top payload bits and gets the quiet bit, as floatToBfloat16 does; without, the input
// must hold no NaN but the canonical one (whose rounding carries nothing), which saves the fix-up.
template <bool kQuietNans>
TERN_AVX2 inline __m256i roundToBf16High(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  if constexpr (kQuietNans) {
    const __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
    return _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  } else {
    return rounded;
  }
}

// Applies f (fp32 vectors -> fp32 vector) to the 16 bf16 values of a vector without shuffles: the even elements
// are the low halves of the 32-bit lanes, the odd ones the high halves.
template <class F>
TERN_AVX2 inline __m256i mapBf16(__m256i a, __m256i b, const F& f) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const __m256 even = f(_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(b, 16)));
  const __m256 odd = f(_mm256_castsi256_ps(_mm256_and_si256(a, high)), _mm256_castsi256_ps(_mm256_and_si256(b, high)));
  return _mm256_or_si256(_mm256_srli_epi32(roundToBf16High<F::kQuietNans>(even), 16),
                         _mm256_and_si256(roundToBf16High<F::kQuietNans>(odd), high));
}

template <CombineOp kOp>
struct F32Step {
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    put<kNt>(d, combinePs<kOp>(loadPs(a), loadPs(b)));
  }
};

template <CombineOp kOp>
struct F64Step {
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    put<kNt>(d, combinePd<kOp>(loadPd(a), loadPd(b)));
  }
};

template <CombineOp kOp>
struct F16Step {
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    putHalves<kNt>(d, combinePs<kOp>(loadHalves(a), loadHalves(b)));
    putHalves<kNt>(d + 16, combinePs<kOp>(loadHalves(a + 16), loadHalves(b + 16)));
  }
};

template <CombineOp kOp>
struct Bf16Step {
  static constexpr bool kQuietNans = false;  // combinePs returns only the canonical NaN, which rounds as is.
  TERN_AVX2 __m256 operator()(__m256 x, __m256 y) const { return combinePs<kOp>(x, y); }
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    put<kNt>(d, mapBf16(loadI(a), loadI(b), *this));
  }
};

// ---- integers ----

// Signed 64-bit greater-than, or unsigned via flipping the sign bits.
template <bool kSigned>
TERN_AVX2 inline __m256i greater64(__m256i a, __m256i b) {
  if constexpr (kSigned) {
    return _mm256_cmpgt_epi64(a, b);
  } else {
    const __m256i flip = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip));
  }
}

template <int kBits, bool kSigned, CombineOp kOp>
TERN_AVX2 inline __m256i combineInt(__m256i a, __m256i b) {
  if constexpr (kBits == 8) {
    if constexpr (kOp == CombineOp::kSum) return _mm256_add_epi8(a, b);
    if constexpr (kOp == CombineOp::kProd) {
      // No 8-bit multiply: the low byte of a 16-bit product depends only on the low bytes, so multiply the even
      // bytes in place and the odd bytes shifted down, and merge.
      const __m256i even = _mm256_mullo_epi16(a, b);
      const __m256i odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
      return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0xff)), _mm256_slli_epi16(odd, 8));
    }
    if constexpr (kOp == CombineOp::kMax) return kSigned ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
    if constexpr (kOp == CombineOp::kMin) return kSigned ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
  } else if constexpr (kBits == 32) {
    if constexpr (kOp == CombineOp::kSum) return _mm256_add_epi32(a, b);
    if constexpr (kOp == CombineOp::kProd) return _mm256_mullo_epi32(a, b);  // Low half: same signed or not.
    if constexpr (kOp == CombineOp::kMax) return kSigned ? _mm256_max_epi32(a, b) : _mm256_max_epu32(a, b);
    if constexpr (kOp == CombineOp::kMin) return kSigned ? _mm256_min_epi32(a, b) : _mm256_min_epu32(a, b);
  } else {
    if constexpr (kOp == CombineOp::kSum) return _mm256_add_epi64(a, b);
    if constexpr (kOp == CombineOp::kProd) {
      // a*b mod 2^64 = alo*blo + ((ahi*blo + alo*bhi) << 32), each partial product a 32x32->64 multiply.
      const __m256i low = _mm256_mul_epu32(a, b);
      const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                             _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
      return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
    }
    if constexpr (kOp == CombineOp::kMax) return _mm256_blendv_epi8(b, a, greater64<kSigned>(a, b));
    if constexpr (kOp == CombineOp::kMin) return _mm256_blendv_epi8(a, b, greater64<kSigned>(a, b));
  }
}

template <int kBits, bool kSigned, CombineOp kOp>
struct IntStep {
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    put<kNt>(d, combineInt<kBits, kSigned, kOp>(loadI(a), loadI(b)));
  }
};

// ---- dispatch within the ISA ----

template <CombineOp kOp>
TERN_AVX2 void binaryForOp(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype) {
  switch (dtype) {
    case ternInt8:
      return runSteps(dst, a, b, count, 1, IntStep<8, true, kOp>{});
    case ternUint8:
      return runSteps(dst, a, b, count, 1, IntStep<8, false, kOp>{});
    case ternInt32:
      return runSteps(dst, a, b, count * 4, 4, IntStep<32, true, kOp>{});
    case ternUint32:
      return runSteps(dst, a, b, count * 4, 4, IntStep<32, false, kOp>{});
    case ternInt64:
      return runSteps(dst, a, b, count * 8, 8, IntStep<64, true, kOp>{});
    case ternUint64:
      return runSteps(dst, a, b, count * 8, 8, IntStep<64, false, kOp>{});
    case ternFloat16:
      return runSteps(dst, a, b, count * 2, 2, F16Step<kOp>{});
    case ternFloat32:
      return runSteps(dst, a, b, count * 4, 4, F32Step<kOp>{});
    case ternFloat64:
      return runSteps(dst, a, b, count * 8, 8, F64Step<kOp>{});
    case ternBfloat16:
      return runSteps(dst, a, b, count * 2, 2, Bf16Step<kOp>{});
    default:
      return;
  }
}

TERN_AVX2 void avx2Binary(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype, CombineOp op) {
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

// ---- finalizeAverage for the float types (integers use the scalar loop); always in place ----

struct DivideF32 {
  __m256 divisor;
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char*) const {
    put<kNt>(d, _mm256_div_ps(loadPs(a), divisor));
  }
};

struct DivideF64 {
  __m256d divisor;
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char*) const {
    put<kNt>(d, _mm256_div_pd(loadPd(a), divisor));
  }
};

struct DivideF16 {
  __m256 divisor;
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char*) const {
    putHalves<kNt>(d, _mm256_div_ps(loadHalves(a), divisor));
    putHalves<kNt>(d + 16, _mm256_div_ps(loadHalves(a + 16), divisor));
  }
};

struct DivideBf16 {
  static constexpr bool kQuietNans = true;  // NaN inputs keep their payload: the rounding must not carry into it.
  __m256 divisor;
  TERN_AVX2 __m256 operator()(__m256 x, __m256) const { return _mm256_div_ps(x, divisor); }
  template <bool kNt>
  TERN_AVX2 void apply(unsigned char* d, const unsigned char* a, const unsigned char*) const {
    const __m256i v = loadI(a);
    put<kNt>(d, mapBf16(v, v, *this));
  }
};

TERN_AVX2 bool avx2Divide(void* dst, size_t count, ternDataType_t dtype, int divisor) {
  const auto f = static_cast<float>(divisor);
  switch (dtype) {
    case ternFloat32:
      runSteps(dst, dst, dst, count * 4, 4, DivideF32{_mm256_set1_ps(f)});
      return true;
    case ternFloat64:
      runSteps(dst, dst, dst, count * 8, 8, DivideF64{_mm256_set1_pd(static_cast<double>(divisor))});
      return true;
    case ternFloat16:
      runSteps(dst, dst, dst, count * 2, 2, DivideF16{_mm256_set1_ps(f)});
      return true;
    case ternBfloat16:
      runSteps(dst, dst, dst, count * 2, 2, DivideBf16{_mm256_set1_ps(f)});
      return true;
    default:
      return false;
  }
}

}  // namespace

const KernelTable& avx2Kernels() {
  static constexpr KernelTable kTable{"avx2", avx2Binary, avx2Divide};
  return kTable;
}

}  // namespace tern::kernels

#endif  // defined(__x86_64__)
