#include "core/compressor.hpp"

#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "compress/codec_factory.hpp"

namespace tern {

std::unique_ptr<Compressor> Compressor::create(const std::string& method, const char* params, size_t count,
                                               ternDataType_t dtype) {
  if (!compress::codecInputTypeSupported(dtype)) {
    throwError(ternInvalidArgument, "compression needs float32, float16 or bfloat16 data, not datatype %d",
               static_cast<int>(dtype));
  }
  std::string spec = method;
  if (params != nullptr && *params != '\0') spec += std::string(":") + params;
  auto c = std::make_unique<Compressor>();
  c->codec = compress::makeCodec(spec);
  c->count = count;
  c->dtype = dtype;
  c->worker.resize(count);
  return c;
}

void Compressor::reset() {
  worker.reset();
  server.reset();
}

namespace {
constexpr size_t kCheckpointHeaderBytes = 16;  // u64 step, u64 worker bytes
}  // namespace

size_t Compressor::checkpointBytes() const {
  return kCheckpointHeaderBytes + worker.serialize().size() + server.serialize().size();
}

size_t Compressor::saveCheckpoint(void* buffer, size_t capacity) const {
  std::vector<uint8_t> w = worker.serialize(), sv = server.serialize();
  const size_t need = kCheckpointHeaderBytes + w.size() + sv.size();
  if (capacity < need)
    throwError(ternInvalidArgument, "ternCompressorSave: buffer of %zu bytes, need %zu", capacity, need);
  const uint64_t header[2] = {step, w.size()};
  auto* out = static_cast<uint8_t*>(buffer);
  std::memcpy(out, header, kCheckpointHeaderBytes);
  std::memcpy(out + kCheckpointHeaderBytes, w.data(), w.size());
  std::memcpy(out + kCheckpointHeaderBytes + w.size(), sv.data(), sv.size());
  return need;
}

void Compressor::loadCheckpoint(const void* buffer, size_t bytes) {
  if (buffer == nullptr || bytes < kCheckpointHeaderBytes) {
    throwError(ternInvalidArgument, "ternCompressorLoad: truncated checkpoint");
  }
  uint64_t header[2];
  std::memcpy(header, buffer, kCheckpointHeaderBytes);
  const auto* in = static_cast<const uint8_t*>(buffer);
  if (header[1] > bytes - kCheckpointHeaderBytes)
    throwError(ternInvalidArgument, "ternCompressorLoad: truncated checkpoint");
  compress::ErrorFeedback w, sv;
  w.deserialize({in + kCheckpointHeaderBytes, static_cast<size_t>(header[1])});
  sv.deserialize(
      {in + kCheckpointHeaderBytes + header[1], bytes - kCheckpointHeaderBytes - static_cast<size_t>(header[1])});
  if (w.size() != count) {
    throwError(ternInvalidArgument, "ternCompressorLoad: checkpoint is for %zu elements, not %zu", w.size(), count);
  }
  worker = std::move(w);
  server = std::move(sv);
  step = header[0];
}

}  // namespace tern
