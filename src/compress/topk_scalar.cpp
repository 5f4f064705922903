// Scalar reference kernel of the Top-K selection pass (see topk_kernels.hpp).
#include "compress/topk_kernels.hpp"

namespace tern::compress {

size_t topkSelectScalar(const TopkSelectArgs& args) {
  return withTopkSource(args, [&](auto in, auto source) {
    TopkSelectState s;
    topkSelectRangeScalar<decltype(in), decltype(source)::value>(args, 0, s);
    return s.count;
  });
}

}  // namespace tern::compress
