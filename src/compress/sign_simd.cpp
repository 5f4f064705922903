// AVX2 and AVX-512 kernels of the sign codec. They follow the reference (sign_scalar.cpp) operation for operation:
// per 1024-element block, lane j of the 32 sum lanes lives in accumulator j/16 (AVX-512) or j/8 (AVX2), and the
// lanes are folded with the tree of pairwise_sum.hpp. The short last block goes through the scalar block kernel.
#include "compress/sign_kernels.hpp"
#include "compress/simd_util.hpp"

#if defined(TERN_CODEC_X86)

namespace tern::compress {
namespace {

using simd::load16;
using simd::load8;

// ---- AVX-512 -------------------------------------------------------------------------------------------------------

// Fold of lanes 0-15 (a) and 16-31 (b): w = 16, 8, 4, 2, 1.
TERN_AVX512 float fold(__m512 a, __m512 b) {
  __m512 s16 = _mm512_add_ps(a, b);
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(s16), _mm512_extractf32x8_ps(s16, 1));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

template <bool kRms>
TERN_AVX512 __m512 term(__m512 v) {
  if constexpr (kRms) return simd::opaque(_mm512_mul_ps(v, v));
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

// signCorrected on 16 values: r - (r >= 0 ? scale : -scale).
TERN_AVX512 __m512 corrected(__m512 r, __m512 pos, __m512 neg) {
  return _mm512_sub_ps(r, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_GE_OQ), neg, pos));
}

template <class In, EfMode kEf, bool kRms>
TERN_AVX512 float encode512(const SignEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  const __m512 zero = _mm512_setzero_ps();
  const __m512 owedPos = _mm512_set1_ps(a.owedScale), owedNeg = _mm512_set1_ps(-a.owedScale);
  PairwiseSum sum;
  size_t b = 0;
  for (; b + kSumBlock <= a.n; b += kSumBlock) {
    __m512 acc0 = zero, acc1 = zero;
    for (int s = 0; s < kSumSteps; ++s) {
      size_t e = b + static_cast<size_t>(s) * kSumLanes;
      __m512 v0 = load16(In{}, x + e);
      __m512 v1 = load16(In{}, x + e + 16);
      if constexpr (kEf != EfMode::kNone) {
        __m512 r0 = _mm512_loadu_ps(a.residual + e);
        __m512 r1 = _mm512_loadu_ps(a.residual + e + 16);
        if constexpr (kEf == EfMode::kSettle) {
          r0 = corrected(r0, owedPos, owedNeg);
          r1 = corrected(r1, owedPos, owedNeg);
        }
        v0 = _mm512_add_ps(v0, r0);
        v1 = _mm512_add_ps(v1, r1);
        _mm512_storeu_ps(a.residual + e, v0);
        _mm512_storeu_ps(a.residual + e + 16, v1);
      }
      acc0 = _mm512_add_ps(acc0, term<kRms>(v0));
      acc1 = _mm512_add_ps(acc1, term<kRms>(v1));
      uint32_t word = static_cast<uint32_t>(_mm512_cmp_ps_mask(v0, zero, _CMP_GE_OQ)) |
                      static_cast<uint32_t>(_mm512_cmp_ps_mask(v1, zero, _CMP_GE_OQ)) << 16;
      std::memcpy(a.bits + e / 8, &word, 4);
    }
    sum.add(fold(acc0, acc1));
  }
  if (b < a.n) {
    float* r = kEf != EfMode::kNone ? a.residual + b : nullptr;
    sum.add(signBlockScalar<In, kEf, kRms>(x + b, a.n - b, r, a.bits + b / 8, a.owedScale));
  }
  return sum.total();
}

// ---- AVX2 ----------------------------------------------------------------------------------------------------------

// Fold of lanes 0-7, 8-15, 16-23, 24-31.
TERN_AVX2 float fold(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  __m256 s8 = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

template <bool kRms>
TERN_AVX2 __m256 term(__m256 v) {
  if constexpr (kRms) return simd::opaque(_mm256_mul_ps(v, v));
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}

// signCorrected on 8 values.
TERN_AVX2 __m256 corrected(__m256 r, __m256 pos, __m256 neg) {
  return _mm256_sub_ps(r, _mm256_blendv_ps(neg, pos, _mm256_cmp_ps(r, _mm256_setzero_ps(), _CMP_GE_OQ)));
}

template <class In, EfMode kEf, bool kRms>
TERN_AVX2 float encode256(const SignEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  const __m256 zero = _mm256_setzero_ps();
  const __m256 owedPos = _mm256_set1_ps(a.owedScale), owedNeg = _mm256_set1_ps(-a.owedScale);
  PairwiseSum sum;
  size_t b = 0;
  for (; b + kSumBlock <= a.n; b += kSumBlock) {
    __m256 acc[4] = {zero, zero, zero, zero};
    for (int s = 0; s < kSumSteps; ++s) {
      size_t e = b + static_cast<size_t>(s) * kSumLanes;
      uint32_t word = 0;
      for (int q = 0; q < 4; ++q) {
        __m256 v = load8(In{}, x + e + 8 * q);
        if constexpr (kEf != EfMode::kNone) {
          __m256 r = _mm256_loadu_ps(a.residual + e + 8 * q);
          if constexpr (kEf == EfMode::kSettle) r = corrected(r, owedPos, owedNeg);
          v = _mm256_add_ps(v, r);
          _mm256_storeu_ps(a.residual + e + 8 * q, v);
        }
        acc[q] = _mm256_add_ps(acc[q], term<kRms>(v));
        word |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_GE_OQ))) << (8 * q);
      }
      std::memcpy(a.bits + e / 8, &word, 4);
    }
    sum.add(fold(acc[0], acc[1], acc[2], acc[3]));
  }
  if (b < a.n) {
    float* r = kEf != EfMode::kNone ? a.residual + b : nullptr;
    sum.add(signBlockScalar<In, kEf, kRms>(x + b, a.n - b, r, a.bits + b / 8, a.owedScale));
  }
  return sum.total();
}

}  // namespace

float signEncodeAvx512(const SignEncodeArgs& a) {
  return withInputType(a.dtype, [&](auto in) {
    using In = decltype(in);
    const auto run = [&]<EfMode kEf>() { return a.rms ? encode512<In, kEf, true>(a) : encode512<In, kEf, false>(a); };
    if (a.residual == nullptr) return run.template operator()<EfMode::kNone>();
    return a.settleOwed ? run.template operator()<EfMode::kSettle>() : run.template operator()<EfMode::kAdd>();
  });
}

float signEncodeAvx2(const SignEncodeArgs& a) {
  return withInputType(a.dtype, [&](auto in) {
    using In = decltype(in);
    const auto run = [&]<EfMode kEf>() { return a.rms ? encode256<In, kEf, true>(a) : encode256<In, kEf, false>(a); };
    if (a.residual == nullptr) return run.template operator()<EfMode::kNone>();
    return a.settleOwed ? run.template operator()<EfMode::kSettle>() : run.template operator()<EfMode::kAdd>();
  });
}

TERN_AVX512 void signResidualAvx512(float* residual, size_t n, float scale) {
  const __m512 pos = _mm512_set1_ps(scale), neg = _mm512_set1_ps(-scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(residual + i, corrected(_mm512_loadu_ps(residual + i), pos, neg));
  signResidualScalar(residual + i, n - i, scale);
}

TERN_AVX2 void signResidualAvx2(float* residual, size_t n, float scale) {
  const __m256 pos = _mm256_set1_ps(scale), neg = _mm256_set1_ps(-scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(residual + i, corrected(_mm256_loadu_ps(residual + i), pos, neg));
  signResidualScalar(residual + i, n - i, scale);
}

TERN_AVX512 void signDecodeAvx512(const uint8_t* bits, size_t n, float scale, float* out, bool accumulate) {
  const __m512 pos = _mm512_set1_ps(scale), neg = _mm512_set1_ps(-scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint16_t m;
    std::memcpy(&m, bits + i / 8, 2);
    __m512 d = _mm512_mask_blend_ps(m, neg, pos);
    if (accumulate) d = _mm512_add_ps(_mm512_loadu_ps(out + i), d);
    _mm512_storeu_ps(out + i, d);
  }
  signDecodeScalar(bits + i / 8, n - i, scale, out + i, accumulate);
}

TERN_AVX2 void signDecodeAvx2(const uint8_t* bits, size_t n, float scale, float* out, bool accumulate) {
  const __m256 pos = _mm256_set1_ps(scale), neg = _mm256_set1_ps(-scale);
  // Lane j tests bit j of the byte broadcast to every lane.
  const __m256i laneBit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i b = _mm256_and_si256(_mm256_set1_epi32(bits[i / 8]), laneBit);
    __m256 set = _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, laneBit));
    __m256 d = _mm256_blendv_ps(neg, pos, set);
    if (accumulate) d = _mm256_add_ps(_mm256_loadu_ps(out + i), d);
    _mm256_storeu_ps(out + i, d);
  }
  signDecodeScalar(bits + i / 8, n - i, scale, out + i, accumulate);
}

}  // namespace tern::compress

#else  // not x86: never dispatched to, but defined so the library links.

namespace tern::compress {
float signEncodeAvx512(const SignEncodeArgs& a) { return signEncodeScalar(a); }
float signEncodeAvx2(const SignEncodeArgs& a) { return signEncodeScalar(a); }
void signResidualAvx512(float* r, size_t n, float s) { signResidualScalar(r, n, s); }
void signResidualAvx2(float* r, size_t n, float s) { signResidualScalar(r, n, s); }
void signDecodeAvx512(const uint8_t* b, size_t n, float s, float* o, bool a) { signDecodeScalar(b, n, s, o, a); }
void signDecodeAvx2(const uint8_t* b, size_t n, float s, float* o, bool a) { signDecodeScalar(b, n, s, o, a); }
}  // namespace tern::compress

#endif
