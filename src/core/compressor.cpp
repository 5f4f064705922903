#include "core/compressor.hpp"

#include "compress/codec_factory.hpp"
#include "core/error.hpp"

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

}  // namespace tern
