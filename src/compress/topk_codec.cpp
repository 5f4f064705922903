#include "compress/topk_codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "base/error.hpp"
#include "compress/isa.hpp"
#include "compress/payload_layout.hpp"
#include "compress/topk_kernels.hpp"

namespace tern::compress {
namespace {

CodecParams topkParams(double ratio, TopKSelect select, bool fp16Values) {
  if (!(ratio > 0.0 && ratio <= 1.0)) {
    throwError(ternInvalidArgument, "topk: ratio %g must be in (0, 1]", ratio);
  }
  CodecParams p;
  p.kind = CodecKind::kTopK;
  p.topkRatio = ratio;
  p.topkSelect = select;
  p.topkFp16Values = fp16Values;
  return p;
}

// Radix-select digits, most significant first: key bits 30-21, 20-10, 9-0 (bit 31 of a key is always 0).
struct Digit {
  int shift;
  int width;
};
constexpr Digit kDigits[3] = {{21, 10}, {10, 11}, {0, 10}};

// One histogram pass over the keys whose bits above the digit equal prefix. With kStore, also stores v into the
// residual (the first pass of an error-feedback encode).
template <class In, TopkSource kSource, bool kStore>
void histogram(const TopkSelectArgs& a, Digit d, uint32_t prefixMask, uint32_t prefix, uint32_t* hist) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  const uint32_t binMask = (1u << d.width) - 1u;
  for (size_t i = 0; i < a.n; ++i) {
    float v = topkLoad<In, kSource>(x, a.residual, i);
    if constexpr (kStore) a.residual[i] = v;
    uint32_t key = absKey(v);
    if ((key & prefixMask) == prefix) ++hist[(key >> d.shift) & binMask];
  }
}

// Exact threshold: key T of the k-th largest |v| and the count of larger keys. Sets a.source for the selection
// pass that follows (kResidual once v has been stored).
void exactThreshold(TopkSelectArgs& a, size_t k, uint32_t& threshold, size_t& greater) {
  uint32_t prefix = 0, prefixMask = 0;
  size_t remaining = k;  // rank of the target among keys matching prefix
  greater = 0;
  std::vector<uint32_t> hist(size_t{1} << 11);
  for (const Digit& d : kDigits) {
    std::fill(hist.begin(), hist.end(), 0u);
    withTopkSource(a, [&](auto in, auto source) {
      using In = decltype(in);
      constexpr TopkSource kSource = decltype(source)::value;
      if constexpr (kSource == TopkSource::kInputAndResidual) {
        histogram<In, kSource, true>(a, d, prefixMask, prefix, hist.data());
      } else {
        histogram<In, kSource, false>(a, d, prefixMask, prefix, hist.data());
      }
    });
    if (a.source == TopkSource::kInputAndResidual) a.source = TopkSource::kResidual;
    // Walk bins from the largest keys down to the bin holding the target rank.
    uint32_t bin = (1u << d.width) - 1u;
    while (hist[bin] < remaining) {
      remaining -= hist[bin];
      greater += hist[bin];
      --bin;
    }
    prefix |= bin << d.shift;
    prefixMask |= ((1u << d.width) - 1u) << d.shift;
  }
  threshold = prefix;
}

// Sampled threshold: the sampleRank-th largest key of the sampled elements.
uint32_t sampledThreshold(const TopkSelectArgs& a, const TopkPlan& plan, const EncodeContext& ctx) {
  const RngKey key = makeRngKey(ctx.seed, ctx.step, kRngStreamTopkSample);
  std::vector<uint32_t> keys(plan.sampleSize);
  withInputType(a.dtype, [&](auto in) {
    using In = decltype(in);
    const auto* x = static_cast<const typename In::Elem*>(a.x);
    for (size_t j = 0; j < plan.sampleSize; ++j) {
      size_t i = rngBelow(rngBits(key, ctx.offset + j), static_cast<uint32_t>(a.n));
      float v = a.residual ? addRn(In::load(x, i), a.residual[i]) : In::load(x, i);
      keys[j] = absKey(v);
    }
  });
  auto nth = keys.begin() + static_cast<std::ptrdiff_t>(plan.sampleRank - 1);
  std::nth_element(keys.begin(), nth, keys.end(), std::greater<uint32_t>());
  return *nth;
}

size_t runSelect(const TopkSelectArgs& a) {
  switch (activeCodecIsa()) {
    case CodecIsa::kAvx512:
      return topkSelectAvx512(a);
    case CodecIsa::kAvx2:
      return topkSelectAvx2(a);
    case CodecIsa::kScalar:
      break;
  }
  return topkSelectScalar(a);
}

void storeValue(uint8_t* values, size_t slot, float v, bool fp16Values) {
  if (fp16Values) {
    const uint16_t h = floatToHalfBits(v);
    std::memcpy(values + 2 * slot, &h, 2);
  } else {
    std::memcpy(values + 4 * slot, &v, 4);
  }
}

// Exact selection of the whole chunk: threshold by radix select, then the selection pass. a.source says where v
// is (kInputAndResidual on first touch); returns the kept count.
size_t exactSelect(TopkSelectArgs& a, size_t k) {
  size_t greater = 0;
  exactThreshold(a, k, a.threshold, greater);
  a.tieBudget = k - greater;
  return runSelect(a);
}

// Sampled selection. Cutting the elements at or above the sampled threshold T in index order when more than k
// qualify would drop the same end of the chunk call after call, whatever its residual grows to. So: every element
// with key >= T is a candidate; when at most k are, all are sent; when more are, the k largest of them with ties
// to the lower index, which is the exact selection's set (the exact k-th key is >= T once k keys are). The rule
// names a set, not an order of work, so the CUDA kernels reach the same bits their own way (topk_kernels.cu).
//
// The candidates (usually about k) are gathered by one selection pass into a scratch list with room for a few
// twice k, which keeps the sampled path at one pass over the chunk; the rare chunk with more (a threshold on a
// run of equal keys, such as zeros) restores the residual and takes the exact selection.
size_t sampledSelect(TopkSelectArgs a, const TopkPlan& plan, const EncodeContext& ctx) {
  const size_t k = plan.k;
  const bool fp16Values = a.fp16Values;
  uint8_t* const indices = a.indices;
  uint8_t* const values = a.values;
  const size_t room = std::min(a.n, 2 * k + 64);
  // Not zero-filled: the pass writes every slot it reports.
  const std::unique_ptr<uint32_t[]> candidateIndex(new uint32_t[room]);
  const std::unique_ptr<float[]> candidateValue(new float[room]);
  TopkSelectArgs gather = a;
  gather.threshold = sampledThreshold(a, plan, ctx);
  gather.tieBudget = room;
  gather.cap = room;
  gather.fp16Values = false;  // v itself, so a dropped candidate's residual can be put back exactly
  gather.indices = reinterpret_cast<uint8_t*>(candidateIndex.get());
  gather.values = reinterpret_cast<uint8_t*>(candidateValue.get());
  const size_t candidates = runSelect(gather);
  // The pass left residual = v everywhere but at the candidates (0 there); put v back where it is not sent.
  auto restore = [&](size_t c) {
    if (a.residual) a.residual[candidateIndex[c]] = candidateValue[c];
  };
  if (candidates == room && room < a.n) {
    // Possibly more candidates than room: v is in the residual (or the input) everywhere once restored.
    for (size_t c = 0; c < candidates; ++c) restore(c);
    if (a.residual) a.source = TopkSource::kResidual;
    return exactSelect(a, k);
  }
  uint32_t threshold = 0;
  size_t tieBudget = candidates;
  if (candidates > k) {
    std::vector<uint32_t> keys(candidates);
    for (size_t c = 0; c < candidates; ++c) keys[c] = absKey(candidateValue[c]);
    auto kth = keys.begin() + static_cast<std::ptrdiff_t>(k - 1);
    std::nth_element(keys.begin(), kth, keys.end(), std::greater<uint32_t>());
    threshold = *kth;
    const size_t greater =
        static_cast<size_t>(std::count_if(keys.begin(), keys.end(), [&](uint32_t key) { return key > threshold; }));
    tieBudget = k - greater;
  }
  // Candidates are in index order, so the first tieBudget ties are the lowest-index ones.
  size_t count = 0, ties = 0;
  for (size_t c = 0; c < candidates; ++c) {
    const float v = candidateValue[c];
    const uint32_t key = absKey(v);
    const bool keep = key > threshold || (key == threshold && ties++ < tieBudget);
    if (!keep) {
      restore(c);
      continue;
    }
    std::memcpy(indices + 4 * count, &candidateIndex[c], 4);
    storeValue(values, count, v, fp16Values);
    if (a.residual) a.residual[candidateIndex[c]] = subRn(v, topkDecodedValue(v, fp16Values));
    ++count;
  }
  return count;
}

}  // namespace

TopkPlan topkPlan(const CodecParams& params, size_t n) {
  TopkPlan plan;
  if (n == 0) return plan;
  double k = std::nearbyint(params.topkRatio * static_cast<double>(n));
  plan.k = k < 1.0 ? 1 : k >= static_cast<double>(n) ? n : static_cast<size_t>(k);
  if (params.topkSelect != TopKSelect::kSampled) return plan;
  size_t m = std::max(kTopkMinSample, (kTopkSampleKept * n + plan.k - 1) / plan.k);
  if (m >= n / 2) return plan;  // sampling would read about as much as the exact selection
  plan.sampled = true;
  plan.sampleSize = m;
  plan.sampleRank = std::clamp<size_t>((plan.k * m + n / 2) / n, 1, m);
  return plan;
}

TopKCodec::TopKCodec(double ratio, TopKSelect select, bool fp16Values) : Codec(topkParams(ratio, select, fp16Values)) {}

size_t TopKCodec::payloadBytes(size_t n) const { return payloadBytesForCount(topkCount(n)); }

size_t TopKCodec::payloadBytesForCount(size_t count) const {
  return topkPayloadBytes(count, params().topkFp16Values ? 2 : 4);
}

size_t TopKCodec::encodeImpl(const void* in, ternDataType_t dtype, size_t n, uint8_t* payload, const EncodeContext& ctx,
                             float* residual) const {
  const TopkPlan plan = topkPlan(params(), n);
  const size_t valueBytes = params().topkFp16Values ? 2 : 4;
  size_t count = 0;
  if (n > 0) {
    TopkSelectArgs a{};
    a.x = in;
    a.dtype = dtype;
    a.n = n;
    a.residual = residual;
    a.source = residual ? TopkSource::kInputAndResidual : TopkSource::kInput;
    a.cap = plan.k;
    a.fp16Values = params().topkFp16Values;
    a.indices = payload + kTopkHeaderBytes;
    a.values = payload + topkValuesOffset(plan.k);
    count = plan.sampled ? sampledSelect(a, plan, ctx) : exactSelect(a, plan.k);
    // Values were written after room for k indices; close the gap when fewer were kept.
    if (count < plan.k) std::memmove(payload + topkValuesOffset(count), a.values, count * valueBytes);
  }
  uint32_t header[2] = {static_cast<uint32_t>(count), static_cast<uint32_t>(n)};
  std::memcpy(payload, header, sizeof header);
  return topkPayloadBytes(count, valueBytes);
}

void TopKCodec::decodeImpl(const uint8_t* payload, size_t bytes, size_t n, float* out, bool accumulate) const {
  const std::string name = spec();
  if (bytes < kTopkHeaderBytes) {
    throwError(ternInvalidArgument, "codec %s: payload of %zu bytes is shorter than its header", name.c_str(), bytes);
  }
  uint32_t header[2];
  std::memcpy(header, payload, sizeof header);
  const size_t count = header[0];
  const bool fp16 = params().topkFp16Values;
  if (header[1] != n || count > n || bytes < payloadBytesForCount(count)) {
    throwError(ternInvalidArgument,
               "codec %s: payload header (count %zu, n %u) and size %zu bytes do not fit a chunk of %zu elements",
               name.c_str(), count, header[1], bytes, n);
  }
  const uint8_t* indices = payload + kTopkHeaderBytes;
  const uint8_t* values = payload + topkValuesOffset(count);
  // Indices must increase (and so be distinct) and stay below n: checked before out is touched.
  int64_t previous = -1;
  for (size_t j = 0; j < count; ++j) {
    uint32_t index;
    std::memcpy(&index, indices + 4 * j, 4);
    if (static_cast<int64_t>(index) <= previous || index >= n) {
      throwError(ternInvalidArgument, "codec %s: payload index %u at position %zu is out of order or range (n %zu)",
                 name.c_str(), index, j, n);
    }
    previous = index;
  }
  if (!accumulate) std::fill(out, out + n, 0.0f);
  for (size_t j = 0; j < count; ++j) {
    uint32_t index;
    std::memcpy(&index, indices + 4 * j, 4);
    float v;
    if (fp16) {
      uint16_t h;
      std::memcpy(&h, values + 2 * j, 2);
      v = halfBitsToFloat(h);
    } else {
      std::memcpy(&v, values + 4 * j, 4);
    }
    out[index] = accumulate ? addRn(out[index], v) : v;
  }
}

}  // namespace tern::compress
