// AVX2 and AVX-512 kernels of the fp16/bf16 codecs. fp16 rounding uses F16C (vcvtps2ph, round to nearest even, the
// same NaN rule as floatToHalfBits); bf16 rounding is integer code (simd_util.hpp), since the AVX-512 BF16
// instruction flushes denormals.
#include "compress/cast_kernels.hpp"
#include "compress/simd_util.hpp"

#if defined(TERN_CODEC_X86)

namespace tern::compress {
namespace {

template <class In, bool kEF, bool kBf16>
TERN_AVX512 void encode512(const CastEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  size_t i = 0;
  for (; i + 16 <= a.n; i += 16) {
    __m512 v = simd::load16(In{}, x + i);
    if constexpr (kEF) v = _mm512_add_ps(v, _mm512_loadu_ps(a.residual + i));
    __m256i h = kBf16 ? simd::toBf16x16(v) : simd::toHalfx16(v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.out + 2 * i), h);
    if constexpr (kEF) {
      __m512 back = kBf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
      _mm512_storeu_ps(a.residual + i, _mm512_sub_ps(v, back));
    }
  }
  castEncodeRangeScalar<In, kEF, kBf16>(a, i);
}

template <class In, bool kEF, bool kBf16>
TERN_AVX2 void encode256(const CastEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  size_t i = 0;
  for (; i + 8 <= a.n; i += 8) {
    __m256 v = simd::load8(In{}, x + i);
    if constexpr (kEF) v = _mm256_add_ps(v, _mm256_loadu_ps(a.residual + i));
    __m128i h = kBf16 ? simd::toBf16x8(v) : simd::toHalfx8(v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(a.out + 2 * i), h);
    if constexpr (kEF) {
      __m256 back = kBf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
      _mm256_storeu_ps(a.residual + i, _mm256_sub_ps(v, back));
    }
  }
  castEncodeRangeScalar<In, kEF, kBf16>(a, i);
}

template <bool kBf16>
TERN_AVX512 void decode512(const uint8_t* in, size_t n, float* out, bool accumulate) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const auto* p = reinterpret_cast<const uint16_t*>(in + 2 * i);
    __m512 d = kBf16 ? simd::load16(Bf16Input{}, p) : simd::load16(F16Input{}, p);
    if (accumulate) d = _mm512_add_ps(_mm512_loadu_ps(out + i), d);
    _mm512_storeu_ps(out + i, d);
  }
  castDecodeRangeScalar(in, i, n, kBf16, out, accumulate);
}

template <bool kBf16>
TERN_AVX2 void decode256(const uint8_t* in, size_t n, float* out, bool accumulate) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const auto* p = reinterpret_cast<const uint16_t*>(in + 2 * i);
    __m256 d = kBf16 ? simd::load8(Bf16Input{}, p) : simd::load8(F16Input{}, p);
    if (accumulate) d = _mm256_add_ps(_mm256_loadu_ps(out + i), d);
    _mm256_storeu_ps(out + i, d);
  }
  castDecodeRangeScalar(in, i, n, kBf16, out, accumulate);
}

}  // namespace

void castEncodeAvx512(const CastEncodeArgs& args) {
  withCastVariant(args, [&](auto in, auto ef, auto bf16) {
    encode512<decltype(in), decltype(ef)::value, decltype(bf16)::value>(args);
  });
}

void castEncodeAvx2(const CastEncodeArgs& args) {
  withCastVariant(args, [&](auto in, auto ef, auto bf16) {
    encode256<decltype(in), decltype(ef)::value, decltype(bf16)::value>(args);
  });
}

void castDecodeAvx512(const uint8_t* in, size_t n, bool bf16, float* out, bool accumulate) {
  bf16 ? decode512<true>(in, n, out, accumulate) : decode512<false>(in, n, out, accumulate);
}

void castDecodeAvx2(const uint8_t* in, size_t n, bool bf16, float* out, bool accumulate) {
  bf16 ? decode256<true>(in, n, out, accumulate) : decode256<false>(in, n, out, accumulate);
}

}  // namespace tern::compress

#else  // not x86: never dispatched to, but defined so the library links.

namespace tern::compress {
void castEncodeAvx512(const CastEncodeArgs& a) { castEncodeScalar(a); }
void castEncodeAvx2(const CastEncodeArgs& a) { castEncodeScalar(a); }
void castDecodeAvx512(const uint8_t* i, size_t n, bool b, float* o, bool a) { castDecodeScalar(i, n, b, o, a); }
void castDecodeAvx2(const uint8_t* i, size_t n, bool b, float* o, bool a) { castDecodeScalar(i, n, b, o, a); }
}  // namespace tern::compress

#endif
