// AVX2 and AVX-512 kernels of the QSGD codec: the reference (qsgd_scalar.cpp) 8 or 16 elements at a time. Codes are
// packed in registers (the k-th code of a vector lands at bit k*bits of the vector's output bytes) and a bucket's
// last partial vector goes through the scalar code.
#include "compress/qsgd_kernels.hpp"
#include "compress/simd_util.hpp"

#if defined(TERN_CODEC_X86)

namespace tern::compress {
namespace {

using simd::load16;
using simd::load8;

// Prefetches the cache line(s) of the next bucket that match element i of this one (one 64-byte line per 16
// elements at most; prefetching a line twice is harmless).
template <class Elem>
inline void prefetchNext(const Elem* nextX, const float* nextR, size_t i) {
  _mm_prefetch(reinterpret_cast<const char*>(nextX + i), _MM_HINT_T0);
  if (nextR) _mm_prefetch(reinterpret_cast<const char*>(nextR + i), _MM_HINT_T0);
}

// ---- AVX-512: 16 elements per step ----------------------------------------------------------------------------

// Packs 16 codes (one per 32-bit lane, < 2^bits) into 2*bits bytes at out.
template <int kBits>
TERN_AVX512 void pack16(__m512i code, uint8_t* out) {
  __m128i b = _mm512_cvtepi32_epi8(code);  // 16 bytes, one code each
  if constexpr (kBits == 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), b);
  } else if constexpr (kBits == 4) {
    __m128i t = _mm_and_si128(_mm_or_si128(b, _mm_srli_epi16(b, 4)), _mm_set1_epi16(0xff));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(t, t));
  } else {
    __m128i t = _mm_or_si128(b, _mm_srli_epi32(b, 6));
    t = _mm_and_si128(_mm_or_si128(t, _mm_srli_epi32(t, 12)), _mm_set1_epi32(0xff));
    uint32_t w = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_cvtepi32_epi8(t)));
    std::memcpy(out, &w, 4);
  }
}

// Unpacks 16 codes from 2*bits bytes at in.
template <int kBits>
TERN_AVX512 __m512i unpack16(const uint8_t* in) {
  if constexpr (kBits == 8) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  } else if constexpr (kBits == 4) {
    __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in));
    __m128i lo = _mm_and_si128(x, _mm_set1_epi8(0x0f));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(x, 4), _mm_set1_epi8(0x0f));
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
  } else {
    uint32_t w;
    std::memcpy(&w, in, 4);
    __m128i rep = _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(w)),
                                   _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
    const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6);
    return _mm512_and_si512(_mm512_srlv_epi32(_mm512_cvtepu8_epi32(rep), shifts), _mm512_set1_epi32(3));
  }
}

template <class In, bool kEF, int kBits>
TERN_AVX512 void encode512(const QsgdEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  const float levels = static_cast<float>(qsgdMaxLevel(kBits));
  const __m512i absMask = _mm512_set1_epi32(0x7fffffff);
  const __m512 levelsV = _mm512_set1_ps(levels);
  const __m512 unit = _mm512_set1_ps(0x1p-24f);
  const __m512i one = _mm512_set1_epi32(1);
  uint8_t* codes = a.payload + qsgdCodesOffset(a.n, a.bucket);
  for (size_t start = 0, b = 0; start < a.n; start += a.bucket, ++b) {
    const size_t count = std::min<size_t>(a.bucket, a.n - start);
    const size_t full = count & ~size_t{15};
    const auto* xb = x + start;
    float* rb = kEF ? a.residual + start : nullptr;
    uint8_t* cb = codes + start * kBits / 8;

    // Pass 1: max |v|.
    __m512i mv = _mm512_setzero_si512();
    for (size_t i = 0; i < full; i += 16) {
      __m512 v = load16(In{}, xb + i);
      if constexpr (kEF) {
        v = _mm512_add_ps(v, _mm512_loadu_ps(rb + i));
        _mm512_storeu_ps(rb + i, v);
      }
      mv = _mm512_max_epu32(mv, _mm512_and_si512(_mm512_castps_si512(v), absMask));
    }
    uint32_t mk = _mm512_reduce_max_epu32(mv);
    if (full < count)
      mk = std::max(mk, qsgdBucketMaxScalar<In, kEF>(xb + full, count - full, kEF ? rb + full : nullptr));
    const float m = bitsFloat(mk);
    std::memcpy(a.payload + 4 * b, &m, 4);
    const float inv = qsgdInverse(m, levels), step = qsgdStep(m, levels);
    const __m512 invV = _mm512_set1_ps(inv), stepV = _mm512_set1_ps(step);
    // Pass 2 computes without touching memory: fetch the next bucket meanwhile, so pass 1 of it finds it in L1.
    const bool more = start + a.bucket < a.n;
    const auto* nextX = more ? xb + a.bucket : xb;
    const float* nextR = kEF && more ? rb + a.bucket : rb;

    // Pass 2: stochastic rounding and packing.
    for (size_t i = 0; i < full; i += 16) {
      prefetchNext(nextX, nextR, i);
      __m512 v = kEF ? _mm512_loadu_ps(rb + i) : load16(In{}, xb + i);
      __m512i vb = _mm512_castps_si512(v);
      __m512 av = _mm512_castsi512_ps(_mm512_and_si512(vb, absMask));
      __m512 t = _mm512_min_ps(simd::opaque(_mm512_mul_ps(av, invV)), levelsV);  // t < s ? t : s
      __m512 l = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
      __m512 p = _mm512_sub_ps(t, l);
      __m512i r = simd::rngBits16(a.key, a.offset + start + i);
      __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(r, 8)), unit);
      __m512i li = _mm512_cvttps_epi32(l);
      __m512i level = _mm512_mask_add_epi32(li, _mm512_cmp_ps_mask(u, p, _CMP_LT_OQ), li, one);
      __m512i neg = _mm512_srli_epi32(vb, 31);
      pack16<kBits>(_mm512_or_si512(level, _mm512_slli_epi32(neg, kBits - 1)), cb + i * kBits / 8);
      if constexpr (kEF) {
        __m512 d = simd::opaque(_mm512_mul_ps(_mm512_cvtepi32_ps(level), stepV));
        d = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(d), _mm512_slli_epi32(neg, 31)));
        _mm512_storeu_ps(rb + i, _mm512_sub_ps(v, d));
      }
    }
    if (full < count) {
      qsgdQuantizeScalar<In, kEF>(xb, full, count, rb, cb, kBits, inv, step, a.key, a.offset + start);
    }
  }
}

template <int kBits>
TERN_AVX512 void decode512(const uint8_t* payload, size_t n, uint32_t bucket, float* out, bool accumulate) {
  const float levels = static_cast<float>(qsgdMaxLevel(kBits));
  const __m512i levelMask = _mm512_set1_epi32(static_cast<int>(qsgdMaxLevel(kBits)));
  const uint8_t* codes = payload + qsgdCodesOffset(n, bucket);
  for (size_t start = 0, b = 0; start < n; start += bucket, ++b) {
    const size_t count = std::min<size_t>(bucket, n - start);
    const size_t full = count & ~size_t{15};
    const uint8_t* cb = codes + start * kBits / 8;
    float* ob = out + start;
    const float step = qsgdStep(qsgdBucketScale(payload, b), levels);
    const __m512 stepV = _mm512_set1_ps(step);
    for (size_t i = 0; i < full; i += 16) {
      __m512i code = unpack16<kBits>(cb + i * kBits / 8);
      __m512i level = _mm512_and_si512(code, levelMask);
      __m512i sign = _mm512_slli_epi32(_mm512_srli_epi32(code, kBits - 1), 31);
      __m512 d = simd::opaque(_mm512_mul_ps(_mm512_cvtepi32_ps(level), stepV));
      d = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(d), sign));
      if (accumulate) d = _mm512_add_ps(_mm512_loadu_ps(ob + i), d);
      _mm512_storeu_ps(ob + i, d);
    }
    if (full < count) qsgdDecodeRangeScalar(cb, full, count, kBits, step, ob, accumulate);
  }
}

// ---- AVX2: 8 elements per step ------------------------------------------------------------------------------------

template <int kBits>
TERN_AVX2 void pack8(__m256i code, uint8_t* out) {
  __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
  if constexpr (kBits == 2) {
    // Combine 4 codes per 32-bit lane (as in pack16) before narrowing.
    __m128i b = _mm_packus_epi16(w, _mm_setzero_si128());  // bytes 0..7 = codes
    __m128i t = _mm_or_si128(b, _mm_srli_epi32(b, 6));
    t = _mm_and_si128(_mm_or_si128(t, _mm_srli_epi32(t, 12)), _mm_set1_epi32(0xff));
    t = _mm_packus_epi16(_mm_packus_epi32(t, t), _mm_setzero_si128());
    uint16_t v = static_cast<uint16_t>(_mm_cvtsi128_si32(t));
    std::memcpy(out, &v, 2);
  } else {
    __m128i b = _mm_packus_epi16(w, w);  // bytes 0..7 = codes
    if constexpr (kBits == 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out), b);
    } else {
      __m128i t = _mm_and_si128(_mm_or_si128(b, _mm_srli_epi16(b, 4)), _mm_set1_epi16(0xff));
      uint32_t v = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(t, t)));
      std::memcpy(out, &v, 4);
    }
  }
}

template <int kBits>
TERN_AVX2 __m256i unpack8(const uint8_t* in) {
  if constexpr (kBits == 8) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in)));
  } else if constexpr (kBits == 4) {
    uint32_t w;
    std::memcpy(&w, in, 4);
    __m128i x = _mm_cvtsi32_si128(static_cast<int>(w));
    __m128i lo = _mm_and_si128(x, _mm_set1_epi8(0x0f));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(x, 4), _mm_set1_epi8(0x0f));
    return _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
  } else {
    uint16_t w;
    std::memcpy(&w, in, 2);
    __m128i rep = _mm_shuffle_epi8(_mm_cvtsi32_si128(w), _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0));
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu8_epi32(rep), shifts), _mm256_set1_epi32(3));
  }
}

template <class In, bool kEF, int kBits>
TERN_AVX2 void encode256(const QsgdEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  const float levels = static_cast<float>(qsgdMaxLevel(kBits));
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff);
  const __m256 levelsV = _mm256_set1_ps(levels);
  const __m256 unit = _mm256_set1_ps(0x1p-24f);
  const __m256i one = _mm256_set1_epi32(1);
  uint8_t* codes = a.payload + qsgdCodesOffset(a.n, a.bucket);
  for (size_t start = 0, b = 0; start < a.n; start += a.bucket, ++b) {
    const size_t count = std::min<size_t>(a.bucket, a.n - start);
    const size_t full = count & ~size_t{7};
    const auto* xb = x + start;
    float* rb = kEF ? a.residual + start : nullptr;
    uint8_t* cb = codes + start * kBits / 8;

    __m256i mv = _mm256_setzero_si256();
    for (size_t i = 0; i < full; i += 8) {
      __m256 v = load8(In{}, xb + i);
      if constexpr (kEF) {
        v = _mm256_add_ps(v, _mm256_loadu_ps(rb + i));
        _mm256_storeu_ps(rb + i, v);
      }
      mv = _mm256_max_epu32(mv, _mm256_and_si256(_mm256_castps_si256(v), absMask));
    }
    __m128i m4 = _mm_max_epu32(_mm256_castsi256_si128(mv), _mm256_extracti128_si256(mv, 1));
    m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0x4e));
    m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0xb1));
    uint32_t mk = static_cast<uint32_t>(_mm_cvtsi128_si32(m4));
    if (full < count)
      mk = std::max(mk, qsgdBucketMaxScalar<In, kEF>(xb + full, count - full, kEF ? rb + full : nullptr));
    const float m = bitsFloat(mk);
    std::memcpy(a.payload + 4 * b, &m, 4);
    const float inv = qsgdInverse(m, levels), step = qsgdStep(m, levels);
    const __m256 invV = _mm256_set1_ps(inv), stepV = _mm256_set1_ps(step);
    // Pass 2 computes without touching memory: fetch the next bucket meanwhile, so pass 1 of it finds it in L1.
    const bool more = start + a.bucket < a.n;
    const auto* nextX = more ? xb + a.bucket : xb;
    const float* nextR = kEF && more ? rb + a.bucket : rb;

    for (size_t i = 0; i < full; i += 8) {
      prefetchNext(nextX, nextR, i);
      __m256 v = kEF ? _mm256_loadu_ps(rb + i) : load8(In{}, xb + i);
      __m256i vb = _mm256_castps_si256(v);
      __m256 av = _mm256_castsi256_ps(_mm256_and_si256(vb, absMask));
      __m256 t = _mm256_min_ps(simd::opaque(_mm256_mul_ps(av, invV)), levelsV);
      __m256 l = _mm256_floor_ps(t);
      __m256 p = _mm256_sub_ps(t, l);
      __m256i r = simd::rngBits8(a.key, a.offset + start + i);
      __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(r, 8)), unit);
      __m256i up = _mm256_castps_si256(_mm256_cmp_ps(u, p, _CMP_LT_OQ));
      __m256i level = _mm256_add_epi32(_mm256_cvttps_epi32(l), _mm256_and_si256(up, one));
      __m256i neg = _mm256_srli_epi32(vb, 31);
      pack8<kBits>(_mm256_or_si256(level, _mm256_slli_epi32(neg, kBits - 1)), cb + i * kBits / 8);
      if constexpr (kEF) {
        __m256 d = simd::opaque(_mm256_mul_ps(_mm256_cvtepi32_ps(level), stepV));
        d = _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(d), _mm256_slli_epi32(neg, 31)));
        _mm256_storeu_ps(rb + i, _mm256_sub_ps(v, d));
      }
    }
    if (full < count) {
      qsgdQuantizeScalar<In, kEF>(xb, full, count, rb, cb, kBits, inv, step, a.key, a.offset + start);
    }
  }
}

template <int kBits>
TERN_AVX2 void decode256(const uint8_t* payload, size_t n, uint32_t bucket, float* out, bool accumulate) {
  const float levels = static_cast<float>(qsgdMaxLevel(kBits));
  const __m256i levelMask = _mm256_set1_epi32(static_cast<int>(qsgdMaxLevel(kBits)));
  const uint8_t* codes = payload + qsgdCodesOffset(n, bucket);
  for (size_t start = 0, b = 0; start < n; start += bucket, ++b) {
    const size_t count = std::min<size_t>(bucket, n - start);
    const size_t full = count & ~size_t{7};
    const uint8_t* cb = codes + start * kBits / 8;
    float* ob = out + start;
    const float step = qsgdStep(qsgdBucketScale(payload, b), levels);
    const __m256 stepV = _mm256_set1_ps(step);
    for (size_t i = 0; i < full; i += 8) {
      __m256i code = unpack8<kBits>(cb + i * kBits / 8);
      __m256i level = _mm256_and_si256(code, levelMask);
      __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(code, kBits - 1), 31);
      __m256 d = simd::opaque(_mm256_mul_ps(_mm256_cvtepi32_ps(level), stepV));
      d = _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(d), sign));
      if (accumulate) d = _mm256_add_ps(_mm256_loadu_ps(ob + i), d);
      _mm256_storeu_ps(ob + i, d);
    }
    if (full < count) qsgdDecodeRangeScalar(cb, full, count, kBits, step, ob, accumulate);
  }
}

// Instantiates kernel<In, kEF, kBits> for the run-time choices.
template <template <class, bool, int> class K, class In>
void dispatchEncode(const QsgdEncodeArgs& a) {
  auto run = [&](auto ef) {
    constexpr bool kEF = decltype(ef)::value;
    switch (a.bits) {
      case 2:
        return K<In, kEF, 2>::run(a);
      case 4:
        return K<In, kEF, 4>::run(a);
      default:
        return K<In, kEF, 8>::run(a);
    }
  };
  a.residual ? run(std::true_type{}) : run(std::false_type{});
}

template <class In, bool kEF, int kBits>
struct Encode512 {
  static void run(const QsgdEncodeArgs& a) { encode512<In, kEF, kBits>(a); }
};
template <class In, bool kEF, int kBits>
struct Encode256 {
  static void run(const QsgdEncodeArgs& a) { encode256<In, kEF, kBits>(a); }
};

}  // namespace

void qsgdEncodeAvx512(const QsgdEncodeArgs& args) {
  withInputType(args.dtype, [&](auto in) { dispatchEncode<Encode512, decltype(in)>(args); });
}

void qsgdEncodeAvx2(const QsgdEncodeArgs& args) {
  withInputType(args.dtype, [&](auto in) { dispatchEncode<Encode256, decltype(in)>(args); });
}

void qsgdDecodeAvx512(const uint8_t* payload, size_t n, int bits, uint32_t bucket, float* out, bool accumulate) {
  switch (bits) {
    case 2:
      return decode512<2>(payload, n, bucket, out, accumulate);
    case 4:
      return decode512<4>(payload, n, bucket, out, accumulate);
    default:
      return decode512<8>(payload, n, bucket, out, accumulate);
  }
}

void qsgdDecodeAvx2(const uint8_t* payload, size_t n, int bits, uint32_t bucket, float* out, bool accumulate) {
  switch (bits) {
    case 2:
      return decode256<2>(payload, n, bucket, out, accumulate);
    case 4:
      return decode256<4>(payload, n, bucket, out, accumulate);
    default:
      return decode256<8>(payload, n, bucket, out, accumulate);
  }
}

}  // namespace tern::compress

#else  // not x86: never dispatched to, but defined so the library links.

namespace tern::compress {
void qsgdEncodeAvx512(const QsgdEncodeArgs& a) { qsgdEncodeScalar(a); }
void qsgdEncodeAvx2(const QsgdEncodeArgs& a) { qsgdEncodeScalar(a); }
void qsgdDecodeAvx512(const uint8_t* p, size_t n, int b, uint32_t k, float* o, bool a) {
  qsgdDecodeScalar(p, n, b, k, o, a);
}
void qsgdDecodeAvx2(const uint8_t* p, size_t n, int b, uint32_t k, float* o, bool a) {
  qsgdDecodeScalar(p, n, b, k, o, a);
}
}  // namespace tern::compress

#endif
