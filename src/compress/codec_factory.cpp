#include "compress/codec_factory.hpp"

#include <cctype>
#include <charconv>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "compress/cast_codec.hpp"
#include "compress/qsgd_codec.hpp"
#include "compress/sign_codec.hpp"
#include "compress/topk_codec.hpp"

namespace tern::compress {
namespace {

std::vector<std::string> splitLower(std::string_view spec) {
  std::vector<std::string> parts(1);
  for (char c : spec) {
    if (c == ':') {
      parts.emplace_back();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      parts.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return parts;
}

[[noreturn]] void bad(std::string_view spec, const std::string& why) {
  throwError(ternInvalidArgument,
             "invalid codec spec '%.*s': %s (expected sign[:rms], qsgd:BITS[:BUCKET], topk:RATIO[:exact][:fp16], "
             "fp16 or bf16)",
             static_cast<int>(spec.size()), spec.data(), why.c_str());
}

template <class T>
T parseNumber(std::string_view spec, const std::string& text, const char* what) {
  T value{};
  auto res = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || res.ec != std::errc() || res.ptr != text.data() + text.size()) {
    bad(spec, std::string(what) + " '" + text + "' is not a number");
  }
  return value;
}

}  // namespace

CodecParams parseCodecSpec(std::string_view spec) {
  std::vector<std::string> parts = splitLower(spec);
  const std::string& name = parts[0];
  CodecParams p;
  if (name == "sign") {
    p.kind = CodecKind::kSign;
    if (parts.size() > 2) bad(spec, "sign takes one option");
    if (parts.size() == 2) {
      if (parts[1] == "rms") {
        p.signScale = SignScale::kRms;
      } else if (parts[1] != "mean") {
        bad(spec, "sign scale '" + parts[1] + "' is not mean or rms");
      }
    }
  } else if (name == "qsgd") {
    p.kind = CodecKind::kQsgd;
    if (parts.size() < 2 || parts.size() > 3) bad(spec, "qsgd takes BITS and an optional BUCKET");
    p.qsgdBits = parseNumber<int>(spec, parts[1], "bits");
    if (p.qsgdBits != 2 && p.qsgdBits != 4 && p.qsgdBits != 8) bad(spec, "qsgd bits must be 2, 4 or 8");
    if (parts.size() == 3) {
      p.qsgdBucket = parseNumber<uint32_t>(spec, parts[2], "bucket");
      if (p.qsgdBucket == 0 || p.qsgdBucket % 32 != 0 || p.qsgdBucket > (1u << 24)) {
        bad(spec, "qsgd bucket must be a positive multiple of 32, at most 2^24");
      }
    }
  } else if (name == "topk") {
    p.kind = CodecKind::kTopK;
    if (parts.size() >= 2) p.topkRatio = parseNumber<double>(spec, parts[1], "ratio");
    if (!(p.topkRatio > 0.0 && p.topkRatio <= 1.0)) bad(spec, "topk ratio must be in (0, 1]");
    for (size_t i = 2; i < parts.size(); ++i) {
      if (parts[i] == "exact") {
        p.topkSelect = TopKSelect::kExact;
      } else if (parts[i] == "sampled") {
        p.topkSelect = TopKSelect::kSampled;
      } else if (parts[i] == "fp16") {
        p.topkFp16Values = true;
      } else if (parts[i] == "fp32") {
        p.topkFp16Values = false;
      } else {
        bad(spec, "topk option '" + parts[i] + "' is not exact, sampled, fp16 or fp32");
      }
    }
  } else if (name == "fp16" || name == "half") {
    p.kind = CodecKind::kFp16;
    if (parts.size() > 1) bad(spec, "fp16 takes no options");
  } else if (name == "bf16" || name == "bfloat16") {
    p.kind = CodecKind::kBf16;
    if (parts.size() > 1) bad(spec, "bf16 takes no options");
  } else {
    bad(spec, name.empty() ? "empty codec name" : "unknown codec '" + name + "'");
  }
  return p;
}

std::unique_ptr<Codec> makeCodec(const CodecParams& p) {
  switch (p.kind) {
    case CodecKind::kSign:
      return std::make_unique<SignCodec>(p.signScale);
    case CodecKind::kQsgd:
      return std::make_unique<QsgdCodec>(p.qsgdBits, p.qsgdBucket);
    case CodecKind::kTopK:
      return std::make_unique<TopKCodec>(p.topkRatio, p.topkSelect, p.topkFp16Values);
    case CodecKind::kFp16:
    case CodecKind::kBf16:
      return std::make_unique<CastCodec>(p.kind);
  }
  throwError(ternInvalidArgument, "codec kind %d is unknown", static_cast<int>(p.kind));
}

std::unique_ptr<Codec> makeCodec(std::string_view spec) { return makeCodec(parseCodecSpec(spec)); }

}  // namespace tern::compress
