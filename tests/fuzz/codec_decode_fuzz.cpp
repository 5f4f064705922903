// Compressed payloads arrive from the network: every codec's decode on arbitrary bytes must either refuse them
// (tern::Error) or write exactly n floats (the output buffer is exactly n long, so ASan sees any overrun) - and a
// payload the codec itself encoded must always be accepted.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "compress/codec.hpp"
#include "compress/codec_factory.hpp"
#include "base/error.hpp"
#include "fuzz_util.hpp"

using namespace tern;

namespace {

const char* const kSpecs[] = {
    "sign",   "sign:rms", "qsgd:2", "qsgd:4", "qsgd:8:32", "qsgd:8", "topk", "topk:0.5:exact", "topk:0.1:sampled:fp16",
    "topk:1", "fp16",     "bf16"};
constexpr size_t kNumSpecs = sizeof(kSpecs) / sizeof(kSpecs[0]);

const compress::Codec& codec(size_t i) {
  static std::vector<std::unique_ptr<compress::Codec>> all = [] {
    std::vector<std::unique_ptr<compress::Codec>> v;
    for (const char* s : kSpecs) v.push_back(compress::makeCodec(s));
    return v;
  }();
  return *all[i];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Bytes in(data, size);
  const size_t which = in.take<uint8_t>() % kNumSpecs;
  const size_t n = in.take<uint16_t>() % 4097;
  const uint8_t mode = in.take<uint8_t>();
  const compress::Codec& c = codec(which);
  std::vector<float> out(n, 0.0f);
  if (mode & 1) {
    // Arbitrary payload bytes, in a buffer of exactly their size.
    std::vector<uint8_t> payload(in.data(), in.data() + in.size());
    try {
      c.decode(payload.data(), payload.size(), n, out.data(), (mode & 2) != 0);
    } catch (const Error&) {
    }
    return 0;
  }
  // The rest of the input as the values to encode: the codec's own payload must round-trip without an error.
  std::vector<float> x(n, 0.0f);
  for (size_t i = 0; i < n && in.size() >= sizeof(float); ++i) {
    float v = in.take<float>();
    x[i] = std::isfinite(v) ? v : 0.0f;
  }
  std::vector<uint8_t> payload(c.payloadBytes(n));
  size_t bytes = 0;
  try {
    bytes = c.encode(x.data(), ternFloat32, n, payload.data(), {}, nullptr);
  } catch (const Error&) {
    return 0;  // a size the codec does not take
  }
  c.decode(payload.data(), bytes, n, out.data(), false);
  return 0;
}
