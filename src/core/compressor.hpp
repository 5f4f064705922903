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

  // Forgets the error feedback (both sides); seed and step stay.
  void reset();

  // The checkpoint (ternCompressorSave/Load): u64 step, u64 bytes of the worker state, the worker state, the
  // server state (compress::ErrorFeedback::serialize), in host byte order.
  // Its size in bytes.
  size_t checkpointBytes() const;
  // Writes it to out, which holds capacity bytes (ternInvalidArgument when fewer than checkpointBytes());
  // returns the bytes written.
  size_t saveCheckpoint(void* out, size_t capacity) const;
  // Replaces the error feedback and step with a checkpoint's; ternInvalidArgument for a truncated one or one of
  // another element count, which leaves this compressor as it was.
  void loadCheckpoint(const void* in, size_t bytes);
};

}  // namespace tern
