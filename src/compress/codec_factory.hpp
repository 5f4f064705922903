// Builds codecs from spec strings, the form used by TERN_ALGO / config knobs and tern-calc:
//
//   sign | sign:mean | sign:rms                 1 bit + scale (mean |x| default, or RMS)
//   qsgd:BITS[:BUCKET]                          BITS 2, 4 or 8; BUCKET default 512 (multiple of 32)
//   topk:RATIO[:exact|:sampled][:fp16|:fp32]    RATIO in (0, 1], default 0.01 when omitted ("topk")
//   fp16 | bf16
//
// Names are case-insensitive; options after a codec's first argument may come in any order.
#pragma once

#include <memory>
#include <string_view>

#include "compress/codec.hpp"

namespace tern::compress {

// Parses spec and builds the codec. Throws tern::Error(ternInvalidArgument) with a message that names the bad part.
std::unique_ptr<Codec> makeCodec(std::string_view spec);

// Parses spec into parameters without building a codec (same errors as makeCodec).
CodecParams parseCodecSpec(std::string_view spec);

// Builds the codec of already-validated parameters.
std::unique_ptr<Codec> makeCodec(const CodecParams& params);

}  // namespace tern::compress
