// The object behind ternCompressor_t: a codec plus the error-feedback state of one tensor (worker side, and the
// server side of the two-phase allreduce), the RNG seed and the step counter that keys stochastic rounding.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "compress/codec.hpp"
#include "compress/error_feedback.hpp"
#include "tern/tern.h"

namespace tern {

struct Compressor {
  std::unique_ptr<compress::Codec> codec;
  size_t count = 0;
  ternDataType_t dtype = ternFloat32;
  compress::ErrorFeedback worker;
  compress::ErrorFeedback server;
  uint64_t seed = 0x7465726e;  // the same on every rank unless set: ranks must agree for identical payloads
  uint64_t step = 0;

  // method "sign", params "rms" -> spec "sign:rms"; a method that already holds ':' params is taken as is.
  static std::unique_ptr<Compressor> create(const std::string& method, const char* params, size_t count,
                                            ternDataType_t dtype);
};

}  // namespace tern
