// Error-feedback checkpoints, ternCompressorLoad: bytes a training job reads back from a file (src/core/compressor.cpp,
// src/compress/error_feedback.cpp). The first input byte picks the codec and the tensor size; the rest is the
// checkpoint. A checkpoint the library accepts must save back to the same bytes: a loader that accepted bytes it
// cannot reproduce would have read something the format does not define.
#include <cstdint>
#include <cstring>
#include <vector>

#include "tern/tern.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t pick = size > 0 ? data[0] : 0;
  static const char* const kMethods[] = {"sign", "qsgd", "topk", "fp16"};
  static const char* const kParams[] = {nullptr, "4", "0.25", nullptr};
  const size_t count = pick >> 2;  // 0..63 elements
  ternCompressor_t c = nullptr;
  if (ternCompressorCreate(kMethods[pick & 3], kParams[pick & 3], count, ternFloat32, &c) != ternSuccess) return 0;
  const size_t rest = size > 0 ? size - 1 : 0;
  const uint8_t* checkpoint = size > 0 ? data + 1 : data;
  if (ternCompressorLoad(c, checkpoint, rest) == ternSuccess) {
    size_t bytes = 0;
    if (ternCompressorSave(c, nullptr, &bytes) != ternSuccess || bytes != rest) __builtin_trap();
    std::vector<uint8_t> again(bytes);
    if (ternCompressorSave(c, again.data(), &bytes) != ternSuccess || bytes != rest) __builtin_trap();
    if (rest > 0 && std::memcmp(again.data(), checkpoint, rest) != 0) __builtin_trap();
  }
  ternCompressorDestroy(c);
  return 0;
}
