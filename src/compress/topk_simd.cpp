// AVX2 and AVX-512 kernels of the Top-K selection pass. Kept elements are rare (k/n is ~1%), so the kernels compare
// 8 or 16 keys at a time and only branch into the keep logic when a lane passes; the keep logic applies the
// reference rules (topk_kernels.hpp) to the lanes in index order.
#include "compress/simd_util.hpp"
#include "compress/topk_kernels.hpp"

#if defined(TERN_CODEC_X86)

namespace tern::compress {
namespace {

// The lowest `count` set bits of mask.
TERN_AVX2 inline uint32_t lowestBits(uint32_t mask, size_t count) {
  if (count >= 32) return mask;
  return _pdep_u32((1u << count) - 1u, mask);
}

// Applies tie budget and cap to the candidate lanes (gt: key > T, eq: key == T); returns the kept lanes.
TERN_AVX2 inline uint32_t keepLanes(uint32_t gt, uint32_t eq, const TopkSelectArgs& a, TopkSelectState& s) {
  uint32_t eqKeep = eq && s.ties < a.tieBudget ? lowestBits(eq, a.tieBudget - s.ties) : 0;
  uint32_t keep = lowestBits(gt | eqKeep, a.cap - s.count);
  s.ties += static_cast<size_t>(__builtin_popcount(keep & eqKeep));
  return keep;
}

template <class In, TopkSource kSource>
TERN_AVX512 __m512 load16v(const typename In::Elem* x, const float* r, size_t i) {
  if constexpr (kSource == TopkSource::kResidual) return _mm512_loadu_ps(r + i);
  __m512 v = simd::load16(In{}, x + i);
  if constexpr (kSource == TopkSource::kInputAndResidual) v = _mm512_add_ps(v, _mm512_loadu_ps(r + i));
  return v;
}

template <class In, TopkSource kSource>
TERN_AVX512 size_t select512(const TopkSelectArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  const __m512i absMask = _mm512_set1_epi32(0x7fffffff);
  const __m512i t = _mm512_set1_epi32(static_cast<int>(a.threshold));
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  TopkSelectState s;
  size_t i = 0;
  for (; i + 16 <= a.n; i += 16) {
    __m512 v = load16v<In, kSource>(x, a.residual, i);
    __m512i key = _mm512_and_si512(_mm512_castps_si512(v), absMask);
    __mmask16 gt = _mm512_cmpgt_epu32_mask(key, t);
    __mmask16 eq = _mm512_cmpeq_epu32_mask(key, t);
    __mmask16 keep = 0;
    if ((gt | eq) && s.count < a.cap) {
      keep = static_cast<__mmask16>(keepLanes(gt, eq, a, s));
      __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i)), iota);
      _mm512_mask_compressstoreu_epi32(a.indices + 4 * s.count, keep, idx);
      if (a.fp16Values) {
        __m512i h = _mm512_cvtepu16_epi32(simd::toHalfx16(v));
        __m256i packed = _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(keep, h));
        int kept = __builtin_popcount(keep);
        _mm256_mask_storeu_epi16(a.values + 2 * s.count, static_cast<__mmask16>((1u << kept) - 1u), packed);
      } else {
        _mm512_mask_compressstoreu_ps(a.values + 4 * s.count, keep, v);
      }
      s.count += static_cast<size_t>(__builtin_popcount(keep));
    }
    if constexpr (kSource != TopkSource::kInput) {
      __m512 r = v;
      if (keep) {
        __m512 dec = a.fp16Values ? _mm512_cvtph_ps(simd::toHalfx16(v)) : v;
        r = _mm512_mask_sub_ps(v, keep, v, dec);
      }
      _mm512_storeu_ps(a.residual + i, r);
    }
  }
  topkSelectRangeScalar<In, kSource>(a, i, s);
  return s.count;
}

template <class In, TopkSource kSource>
TERN_AVX2 __m256 load8v(const typename In::Elem* x, const float* r, size_t i) {
  if constexpr (kSource == TopkSource::kResidual) return _mm256_loadu_ps(r + i);
  __m256 v = simd::load8(In{}, x + i);
  if constexpr (kSource == TopkSource::kInputAndResidual) v = _mm256_add_ps(v, _mm256_loadu_ps(r + i));
  return v;
}

template <class In, TopkSource kSource>
TERN_AVX2 size_t select256(const TopkSelectArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff);
  // Keys and T are below 2^31, so signed compares order them correctly.
  const __m256i t = _mm256_set1_epi32(static_cast<int>(a.threshold));
  TopkSelectState s;
  size_t i = 0;
  for (; i + 8 <= a.n; i += 8) {
    __m256 v = load8v<In, kSource>(x, a.residual, i);
    __m256i key = _mm256_and_si256(_mm256_castps_si256(v), absMask);
    uint32_t gt = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(key, t))));
    uint32_t eq = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(key, t))));
    if constexpr (kSource != TopkSource::kInput) _mm256_storeu_ps(a.residual + i, v);
    if ((gt | eq) && s.count < a.cap) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, v);
      for (uint32_t keep = keepLanes(gt, eq, a, s); keep != 0; keep &= keep - 1) {
        int j = __builtin_ctz(keep);
        float value = lanes[j];
        uint32_t index = static_cast<uint32_t>(i + j);
        std::memcpy(a.indices + 4 * s.count, &index, 4);
        if (a.fp16Values) {
          uint16_t h = floatToHalfBits(value);
          std::memcpy(a.values + 2 * s.count, &h, 2);
        } else {
          std::memcpy(a.values + 4 * s.count, &value, 4);
        }
        ++s.count;
        if constexpr (kSource != TopkSource::kInput) {
          a.residual[i + j] = subRn(value, topkDecodedValue(value, a.fp16Values));
        }
      }
    }
  }
  topkSelectRangeScalar<In, kSource>(a, i, s);
  return s.count;
}

}  // namespace

size_t topkSelectAvx512(const TopkSelectArgs& args) {
  return withTopkSource(args,
                        [&](auto in, auto source) { return select512<decltype(in), decltype(source)::value>(args); });
}

size_t topkSelectAvx2(const TopkSelectArgs& args) {
  return withTopkSource(args,
                        [&](auto in, auto source) { return select256<decltype(in), decltype(source)::value>(args); });
}

}  // namespace tern::compress

#else  // not x86: never dispatched to, but defined so the library links.

namespace tern::compress {
size_t topkSelectAvx512(const TopkSelectArgs& a) { return topkSelectScalar(a); }
size_t topkSelectAvx2(const TopkSelectArgs& a) { return topkSelectScalar(a); }
}  // namespace tern::compress

#endif
