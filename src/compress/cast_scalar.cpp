// Scalar reference kernels of the fp16/bf16 codecs (see cast_kernels.hpp).
#include "compress/cast_kernels.hpp"

namespace tern::compress {

void castEncodeScalar(const CastEncodeArgs& args) {
  withCastVariant(args, [&](auto in, auto ef, auto bf16) {
    castEncodeRangeScalar<decltype(in), decltype(ef)::value, decltype(bf16)::value>(args, 0);
  });
}

void castDecodeScalar(const uint8_t* in, size_t n, bool bf16, float* out, bool accumulate) {
  castDecodeRangeScalar(in, 0, n, bf16, out, accumulate);
}

}  // namespace tern::compress
