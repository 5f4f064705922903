// AVX-512 (F + BW) kernels; same structure and rules as reduce_avx2.cpp, on 64-byte vectors with mask registers for
// the NaN fix-ups. The library is built without -mavx512*, so every function carries the target attribute.
#if defined(__x86_64__)

// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the intrinsics (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/reduce_dispatch.hpp"

// Not an error-handling macro: the one target string every function in this file needs.
#define TERN_AVX512 __attribute__((target("avx512f,avx512bw,avx2,f16c")))

namespace tern::kernels {
namespace {

constexpr size_t kVec = 64;  // Bytes per step.

// ---- loads, and stores that are ordinary or non-temporal (aligned, bypassing the caches) ----

TERN_AVX512 inline __m512i loadI(const unsigned char* p) { return _mm512_loadu_si512(p); }
TERN_AVX512 inline __m512 loadPs(const unsigned char* p) { return _mm512_loadu_ps(p); }
TERN_AVX512 inline __m512d loadPd(const unsigned char* p) { return _mm512_loadu_pd(p); }
TERN_AVX512 inline __m512 loadHalves(const unsigned char* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

template <bool kNt>
TERN_AVX512 inline void put(unsigned char* p, __m512i v) {
  if constexpr (kNt) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v);
  } else {
    _mm512_storeu_si512(p, v);
  }
}
template <bool kNt>
TERN_AVX512 inline void put(unsigned char* p, __m256i v) {
  if constexpr (kNt) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
}
template <bool kNt>
TERN_AVX512 inline void put(unsigned char* p, __m512 v) {
  put<kNt>(p, _mm512_castps_si512(v));
}
template <bool kNt>
TERN_AVX512 inline void put(unsigned char* p, __m512d v) {
  put<kNt>(p, _mm512_castpd_si512(v));
}
// 16 fp32 values rounded (to nearest even) to 16 halves.
template <bool kNt>
TERN_AVX512 inline void putHalves(unsigned char* p, __m512 v) {
  put<kNt>(p, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// ---- the loop: whole steps, two per iteration, then the last partial step on a zero-padded copy ----

template <bool kNt, class Step>
TERN_AVX512 size_t runWholeSteps(unsigned char* d, const unsigned char* x, const unsigned char* y, size_t bytes,
                                 const Step& step) {
  size_t i = 0;
  for (; i + 2 * kVec <= bytes; i += 2 * kVec) {
    step.template apply<kNt>(d + i, x + i, y + i);
    step.template apply<kNt>(d + i + kVec, x + i + kVec, y + i + kVec);
  }
  for (; i + kVec <= bytes; i += kVec) step.template apply<kNt>(d + i, x + i, y + i);
  return i;
}

template <class Step>
TERN_AVX512 void runPartialStep(unsigned char* d, const unsigned char* x, const unsigned char* y, size_t bytes,
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
TERN_AVX512 void runSteps(void* dst, const void* a, const void* b, size_t bytes, size_t elem, const Step& step) {
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
TERN_AVX512 inline __m512 combinePs(__m512 a, __m512 b) {
  const __m512 nan = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(kCanonicalNanF32)));
  if constexpr (kOp == CombineOp::kSum || kOp == CombineOp::kProd) {
    const __m512 r = kOp == CombineOp::kSum ? _mm512_add_ps(a, b) : _mm512_mul_ps(a, b);
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), nan);
  } else {
    // maxps(x, y) is x > y ? x : y; both ways round they agree except for equal inputs (AND/OR picks +0 for max,
    // -0 for min) and NaN (masked to the canonical NaN). Integer AND/OR: the _ps forms need AVX512DQ.
    __m512i r;
    if constexpr (kOp == CombineOp::kMax) {
      r = _mm512_and_si512(_mm512_castps_si512(_mm512_max_ps(a, b)), _mm512_castps_si512(_mm512_max_ps(b, a)));
    } else {
      r = _mm512_or_si512(_mm512_castps_si512(_mm512_min_ps(a, b)), _mm512_castps_si512(_mm512_min_ps(b, a)));
    }
    return _mm512_mask_mov_ps(_mm512_castsi512_ps(r), _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), nan);
  }
}

template <CombineOp kOp>
TERN_AVX512 inline __m512d combinePd(__m512d a, __m512d b) {
  const __m512d nan = _mm512_castsi512_pd(_mm512_set1_epi64(static_cast<long long>(kCanonicalNanF64)));
  if constexpr (kOp == CombineOp::kSum || kOp == CombineOp::kProd) {
    const __m512d r = kOp == CombineOp::kSum ? _mm512_add_pd(a, b) : _mm512_mul_pd(a, b);
    return _mm512_mask_mov_pd(r, _mm512_cmp_pd_mask(r, r, _CMP_UNORD_Q), nan);
  } else {
    __m512i r;
    if constexpr (kOp == CombineOp::kMax) {
      r = _mm512_and_si512(_mm512_castpd_si512(_mm512_max_pd(a, b)), _mm512_castpd_si512(_mm512_max_pd(b, a)));
    } else {
      r = _mm512_or_si512(_mm512_castpd_si512(_mm512_min_pd(a, b)), _mm512_castpd_si512(_mm512_min_pd(b, a)));
    }
    return _mm512_mask_mov_pd(_mm512_castsi512_pd(r), _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q), nan);
  }
}

// fp32 -> bf16 round-to-nearest-even into the upper 16 bits of each lane. With kQuietNans, NaN keeps its payload
// and is quieted; without, the input must hold no NaN but the canonical one, which rounds as is.
template <bool kQuietNans>
TERN_AVX512 inline __m512i roundToBf16High(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  if constexpr (kQuietNans) {
    const __m512i quiet = _mm512_or_si512(bits, _mm512_set1_epi32(0x00400000));
    return _mm512_mask_mov_epi32(rounded, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), quiet);
  } else {
    return rounded;
  }
}

// Applies f to the 32 bf16 values of a vector in two fp32 halves: even elements (low halves of the 32-bit lanes)
// and odd elements (high halves), so no shuffles are needed.
template <class F>
TERN_AVX512 inline __m512i mapBf16(__m512i a, __m512i b, const F& f) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512 even = f(_mm512_castsi512_ps(_mm512_slli_epi32(a, 16)), _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)));
  const __m512 odd = f(_mm512_castsi512_ps(_mm512_and_si512(a, high)), _mm512_castsi512_ps(_mm512_and_si512(b, high)));
  return _mm512_or_si512(_mm512_srli_epi32(roundToBf16High<F::kQuietNans>(even), 16),
                         _mm512_and_si512(roundToBf16High<F::kQuietNans>(odd), high));
}

template <CombineOp kOp>
struct F32Step {
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    put<kNt>(d, combinePs<kOp>(loadPs(a), loadPs(b)));
  }
};

template <CombineOp kOp>
struct F64Step {
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    put<kNt>(d, combinePd<kOp>(loadPd(a), loadPd(b)));
  }
};

template <CombineOp kOp>
struct F16Step {
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    putHalves<kNt>(d, combinePs<kOp>(loadHalves(a), loadHalves(b)));
    putHalves<kNt>(d + 32, combinePs<kOp>(loadHalves(a + 32), loadHalves(b + 32)));
  }
};

template <CombineOp kOp>
struct Bf16Step {
  static constexpr bool kQuietNans = false;  // combinePs returns only the canonical NaN, which rounds as is.
  TERN_AVX512 __m512 operator()(__m512 x, __m512 y) const { return combinePs<kOp>(x, y); }
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    put<kNt>(d, mapBf16(loadI(a), loadI(b), *this));
  }
};

// ---- integers ----

template <int kBits, bool kSigned, CombineOp kOp>
TERN_AVX512 inline __m512i combineInt(__m512i a, __m512i b) {
  if constexpr (kBits == 8) {
    if constexpr (kOp == CombineOp::kSum) return _mm512_add_epi8(a, b);
    if constexpr (kOp == CombineOp::kProd) {
      // No 8-bit multiply: the low byte of a 16-bit product depends only on the low bytes; multiply even bytes in
      // place, odd bytes shifted down, and merge the odd results back with a byte mask.
      const __m512i even = _mm512_mullo_epi16(a, b);
      const __m512i odd = _mm512_mullo_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(b, 8));
      return _mm512_mask_blend_epi8(0xaaaaaaaaaaaaaaaaull, even, _mm512_slli_epi16(odd, 8));
    }
    if constexpr (kOp == CombineOp::kMax) return kSigned ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
    if constexpr (kOp == CombineOp::kMin) return kSigned ? _mm512_min_epi8(a, b) : _mm512_min_epu8(a, b);
  } else if constexpr (kBits == 32) {
    if constexpr (kOp == CombineOp::kSum) return _mm512_add_epi32(a, b);
    if constexpr (kOp == CombineOp::kProd) return _mm512_mullo_epi32(a, b);  // Low half: same signed or not.
    if constexpr (kOp == CombineOp::kMax) return kSigned ? _mm512_max_epi32(a, b) : _mm512_max_epu32(a, b);
    if constexpr (kOp == CombineOp::kMin) return kSigned ? _mm512_min_epi32(a, b) : _mm512_min_epu32(a, b);
  } else {
    if constexpr (kOp == CombineOp::kSum) return _mm512_add_epi64(a, b);
    if constexpr (kOp == CombineOp::kProd) {
      // a*b mod 2^64 = alo*blo + ((ahi*blo + alo*bhi) << 32); vpmullq would need AVX512DQ.
      const __m512i low = _mm512_mul_epu32(a, b);
      const __m512i cross = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(a, 32), b),
                                             _mm512_mul_epu32(a, _mm512_srli_epi64(b, 32)));
      return _mm512_add_epi64(low, _mm512_slli_epi64(cross, 32));
    }
    if constexpr (kOp == CombineOp::kMax) return kSigned ? _mm512_max_epi64(a, b) : _mm512_max_epu64(a, b);
    if constexpr (kOp == CombineOp::kMin) return kSigned ? _mm512_min_epi64(a, b) : _mm512_min_epu64(a, b);
  }
}

template <int kBits, bool kSigned, CombineOp kOp>
struct IntStep {
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char* b) const {
    put<kNt>(d, combineInt<kBits, kSigned, kOp>(loadI(a), loadI(b)));
  }
};

// ---- dispatch within the ISA ----

template <CombineOp kOp>
TERN_AVX512 void binaryForOp(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype) {
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

TERN_AVX512 void avx512Binary(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype,
                              CombineOp op) {
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
  __m512 divisor;
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char*) const {
    put<kNt>(d, _mm512_div_ps(loadPs(a), divisor));
  }
};

struct DivideF64 {
  __m512d divisor;
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char*) const {
    put<kNt>(d, _mm512_div_pd(loadPd(a), divisor));
  }
};

struct DivideF16 {
  __m512 divisor;
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char*) const {
    putHalves<kNt>(d, _mm512_div_ps(loadHalves(a), divisor));
    putHalves<kNt>(d + 32, _mm512_div_ps(loadHalves(a + 32), divisor));
  }
};

struct DivideBf16 {
  static constexpr bool kQuietNans = true;  // NaN inputs keep their payload: the rounding must not carry into it.
  __m512 divisor;
  TERN_AVX512 __m512 operator()(__m512 x, __m512) const { return _mm512_div_ps(x, divisor); }
  template <bool kNt>
  TERN_AVX512 void apply(unsigned char* d, const unsigned char* a, const unsigned char*) const {
    const __m512i v = loadI(a);
    put<kNt>(d, mapBf16(v, v, *this));
  }
};

TERN_AVX512 bool avx512Divide(void* dst, size_t count, ternDataType_t dtype, int divisor) {
  const auto f = static_cast<float>(divisor);
  switch (dtype) {
    case ternFloat32:
      runSteps(dst, dst, dst, count * 4, 4, DivideF32{_mm512_set1_ps(f)});
      return true;
    case ternFloat64:
      runSteps(dst, dst, dst, count * 8, 8, DivideF64{_mm512_set1_pd(static_cast<double>(divisor))});
      return true;
    case ternFloat16:
      runSteps(dst, dst, dst, count * 2, 2, DivideF16{_mm512_set1_ps(f)});
      return true;
    case ternBfloat16:
      runSteps(dst, dst, dst, count * 2, 2, DivideBf16{_mm512_set1_ps(f)});
      return true;
    default:
      return false;
  }
}

}  // namespace

const KernelTable& avx512Kernels() {
  static constexpr KernelTable kTable{"avx512", avx512Binary, avx512Divide};
  return kTable;
}

}  // namespace tern::kernels

#endif  // defined(__x86_64__)
