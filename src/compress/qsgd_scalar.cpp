// Scalar reference kernels of the QSGD codec (see qsgd_kernels.hpp).
#include "compress/qsgd_kernels.hpp"

namespace tern::compress {
namespace {

template <class In, bool kEF>
void encode(const QsgdEncodeArgs& a) {
  const auto* x = static_cast<const typename In::Elem*>(a.x);
  const float levels = static_cast<float>(qsgdMaxLevel(a.bits));
  uint8_t* codes = a.payload + qsgdCodesOffset(a.n, a.bucket);
  for (size_t start = 0, b = 0; start < a.n; start += a.bucket, ++b) {
    size_t count = std::min<size_t>(a.bucket, a.n - start);
    float* r = kEF ? a.residual + start : nullptr;
    float m = bitsFloat(qsgdBucketMaxScalar<In, kEF>(x + start, count, r));
    std::memcpy(a.payload + 4 * b, &m, 4);
    qsgdQuantizeScalar<In, kEF>(x + start, 0, count, r, codes + start * a.bits / 8, a.bits, qsgdInverse(m, levels),
                                qsgdStep(m, levels), a.key, a.offset + start);
  }
}

}  // namespace

void qsgdEncodeScalar(const QsgdEncodeArgs& args) {
  withInputType(args.dtype, [&](auto in) {
    using In = decltype(in);
    args.residual ? encode<In, true>(args) : encode<In, false>(args);
  });
}

void qsgdDecodeScalar(const uint8_t* payload, size_t n, int bits, uint32_t bucket, float* out, bool accumulate) {
  const float levels = static_cast<float>(qsgdMaxLevel(bits));
  const uint8_t* codes = payload + qsgdCodesOffset(n, bucket);
  for (size_t start = 0, b = 0; start < n; start += bucket, ++b) {
    size_t count = std::min<size_t>(bucket, n - start);
    qsgdDecodeRangeScalar(codes + start * bits / 8, 0, count, bits, qsgdStep(qsgdBucketScale(payload, b), levels),
                          out + start, accumulate);
  }
}

}  // namespace tern::compress
