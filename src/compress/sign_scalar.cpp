// Scalar reference kernels of the sign codec (see sign_kernels.hpp).
#include "compress/sign_kernels.hpp"

namespace tern::compress {
namespace {

template <class In, bool kEF, bool kRms>
float encode(const SignEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  PairwiseSum sum;
  for (size_t b = 0; b < a.n; b += kSumBlock) {
    size_t count = a.n - b < kSumBlock ? a.n - b : kSumBlock;
    sum.add(signBlockScalar<In, kEF, kRms>(x + b, count, kEF ? a.residual + b : nullptr, a.bits + b / 8));
  }
  return sum.total();
}

template <class In>
float encodeFor(const SignEncodeArgs& a) {
  if (a.residual) return a.rms ? encode<In, true, true>(a) : encode<In, true, false>(a);
  return a.rms ? encode<In, false, true>(a) : encode<In, false, false>(a);
}

}  // namespace

float signEncodeScalar(const SignEncodeArgs& args) {
  return withInputType(args.dtype, [&](auto in) { return encodeFor<decltype(in)>(args); });
}

void signResidualScalar(float* residual, size_t n, float scale) {
  for (size_t i = 0; i < n; ++i) {
    float v = residual[i];
    residual[i] = subRn(v, v >= 0.0f ? scale : -scale);
  }
}

void signDecodeScalar(const uint8_t* bits, size_t n, float scale, float* out, bool accumulate) {
  // Two loops rather than a per-element branch, so the compiler can vectorize each.
  if (accumulate) {
    for (size_t i = 0; i < n; ++i) out[i] = addRn(out[i], (bits[i / 8] >> (i % 8)) & 1u ? scale : -scale);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = (bits[i / 8] >> (i % 8)) & 1u ? scale : -scale;
  }
}

}  // namespace tern::compress
