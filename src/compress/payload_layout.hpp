// Byte layouts of every codec's payload, in one place, shared by the CPU and CUDA kernels. All multi-byte fields
// are little-endian (the byte order of every machine tern runs on). Sizes are exact functions of the element count n
// (Top-K: of the number of kept elements).
//
//   sign   [f32 scale][ceil(n/8) bytes: bit i of byte i/8 (LSB first) is 1 when x[i] >= 0]
//   qsgd   [f32 max|x| per bucket, ceil(n/bucket) of them][codes: element i at bit i*bits, LSB first]
//          code = sign << (bits-1) | level, level in [0, 2^(bits-1) - 1]
//   topk   [u32 count][u32 n][u32 index * count, increasing][value * count: f32, or f16 bits]
//   fp16   [u16 * n]      bf16   [u16 * n]
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/codec_math.hpp"

namespace tern::compress {

TERN_HD size_t signPayloadBytes(size_t n) { return 4 + (n + 7) / 8; }

TERN_HD size_t qsgdBucketCount(size_t n, size_t bucket) { return (n + bucket - 1) / bucket; }
TERN_HD size_t qsgdCodesOffset(size_t n, size_t bucket) { return 4 * qsgdBucketCount(n, bucket); }
TERN_HD size_t qsgdPayloadBytes(size_t n, int bits, size_t bucket) {
  return qsgdCodesOffset(n, bucket) + (n * static_cast<size_t>(bits) + 7) / 8;
}
// Largest level of a bits-wide code: 1, 7 or 127.
TERN_HD uint32_t qsgdMaxLevel(int bits) { return (1u << (bits - 1)) - 1u; }

inline constexpr size_t kTopkHeaderBytes = 8;
TERN_HD size_t topkPayloadBytes(size_t count, size_t valueBytes) { return kTopkHeaderBytes + count * (4 + valueBytes); }
TERN_HD size_t topkValuesOffset(size_t count) { return kTopkHeaderBytes + 4 * count; }

TERN_HD size_t castPayloadBytes(size_t n) { return 2 * n; }

}  // namespace tern::compress
