#include "compress/codec_cost.hpp"

#include "compress/codec_factory.hpp"

namespace tern::compress {
namespace {

// Measured with perf/codec_bench (64 MiB fp32 tensors, AVX-512 kernels, one core, CPU time) on the reference
// machine: a 2-vCPU Intel Xeon VM (Sapphire Rapids class), memcpy 6.9 GB/s. GB/s of fp32 data.
constexpr double kMemcpyGBs = 6.9;
struct Throughput {
  double encodeGBs;
  double encodeEfGBs;
  double decodeGBs;
};
// Sign's error feedback: one pass over the residual since its correction is owed to the next encode
// (error_feedback.hpp); measured 1.35x the two-pass rate in one run.
constexpr Throughput kSignMean{10.0, 5.5, 11.8};
constexpr Throughput kSignRms{10.3, 5.5, 11.0};
constexpr Throughput kQsgd2{5.1, 4.3, 8.8};
constexpr Throughput kQsgd4{5.3, 4.3, 8.4};
constexpr Throughput kQsgd8{5.4, 4.3, 8.5};
constexpr Throughput kTopkSampled{7.1, 5.3, 100.0};  // decode touches only the kept 1%
constexpr Throughput kTopkExact{1.2, 1.0, 86.0};
constexpr Throughput kFp16{8.9, 5.3, 8.9};
constexpr Throughput kBf16{7.1, 5.1, 9.5};

Throughput throughputOf(const CodecParams& p) {
  switch (p.kind) {
    case CodecKind::kSign:
      return p.signScale == SignScale::kRms ? kSignRms : kSignMean;
    case CodecKind::kQsgd:
      return p.qsgdBits == 2 ? kQsgd2 : p.qsgdBits == 4 ? kQsgd4 : kQsgd8;
    case CodecKind::kTopK:
      return p.topkSelect == TopKSelect::kExact ? kTopkExact : kTopkSampled;
    case CodecKind::kFp16:
      return kFp16;
    case CodecKind::kBf16:
      return kBf16;
  }
  return kFp16;
}

}  // namespace

CodecCost codecCost(const CodecParams& params) {
  Throughput t = throughputOf(params);
  CodecCost cost;
  cost.encodeSecondsPerByte = 1.0 / (t.encodeGBs * 1e9);
  cost.encodeEfSecondsPerByte = 1.0 / (t.encodeEfGBs * 1e9);
  cost.decodeSecondsPerByte = 1.0 / (t.decodeGBs * 1e9);
  // Top-K decode scatters the kept elements only: its time scales with the ratio (measured at 1%).
  if (params.kind == CodecKind::kTopK) cost.decodeSecondsPerByte *= params.topkRatio / 0.01;
  constexpr size_t kLargeChunk = size_t{1} << 24;
  cost.compressionRatio = static_cast<double>(kLargeChunk * sizeof(float)) /
                          static_cast<double>(makeCodec(params)->payloadBytes(kLargeChunk));
  cost.memcpyBytesPerSecond = kMemcpyGBs * 1e9;
  return cost;
}

CodecCost codecCost(std::string_view spec) { return codecCost(parseCodecSpec(spec)); }

}  // namespace tern::compress
