// What a codec costs, for the cost model (src/algorithms) and tern-calc: CPU time to encode and decode per byte of
// fp32 data, and the compression ratio. Times are single-core throughputs measured by perf/codec_bench (64 MiB
// tensors, best ISA) on the reference machine named in codec_cost.cpp; re-measure and update the table when kernels
// change. Calibration can scale them by the ratio of the local memcpy bandwidth to memcpyBytesPerSecond. Top-K's
// encode and ratio are for its default 1% (other ratios scale the decode and the ratio, not the encode).
#pragma once

#include <string_view>

#include "compress/codec.hpp"

namespace tern::compress {

struct CodecCost {
  double encodeSecondsPerByte = 0;    // per byte of fp32 input
  double encodeEfSecondsPerByte = 0;  // the same with error feedback (reads and writes the residual too)
  double decodeSecondsPerByte = 0;    // per byte of fp32 output (decode with accumulate)
  double compressionRatio = 1;        // fp32 bytes / payload bytes, for large chunks
  double memcpyBytesPerSecond = 0;    // memcpy bandwidth measured alongside, for scaling to other machines
};

// Cost of the codec of `spec` (makeCodec syntax). Throws tern::Error(ternInvalidArgument) for a bad spec.
CodecCost codecCost(std::string_view spec);
CodecCost codecCost(const CodecParams& params);

}  // namespace tern::compress
