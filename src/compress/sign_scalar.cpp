// Scalar reference kernels of the sign codec (see sign_kernels.hpp).
#include "compress/sign_kernels.hpp"

namespace tern::compress {
namespace {

template <class In, EfMode kEf, bool kRms>
float encode(const SignEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  PairwiseSum sum;
  for (size_t b = 0; b < a.n; b += kSumBlock) {
    size_t count = a.n - b < kSumBlock ? a.n - b : kSumBlock;
    float* r = kEf != EfMode::kNone ? a.residual + b : nullptr;
    sum.add(signBlockScalar<In, kEf, kRms>(x + b, count, r, a.bits + b / 8, a.owedScale));
  }
  return sum.total();
}

template <class In, EfMode kEf>
float encodeFor(const SignEncodeArgs& a) {
  return a.rms ? encode<In, kEf, true>(a) : encode<In, kEf, false>(a);
}

}  // namespace

float signEncodeScalar(const SignEncodeArgs& args) {
  return withInputType(args.dtype, [&](auto in) {
    using In = decltype(in);
    if (args.residual == nullptr) return encodeFor<In, EfMode::kNone>(args);
    return args.settleOwed ? encodeFor<In, EfMode::kSettle>(args) : encodeFor<In, EfMode::kAdd>(args);
  });
}

void signResidualScalar(float* residual, size_t n, float scale) {
  for (size_t i = 0; i < n; ++i) residual[i] = signCorrected(residual[i], scale);
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
