// Error feedback state of one tensor (EF-SGD, Karimireddy et al. 2019; DeepSpeed 1-bit Adam's worker and server
// errors): the residual r of everything a codec has not yet transmitted. Each encode sends Q(x + r) and keeps
// r = (x + r) - decode(Q(x + r)), so compression error is delayed, not lost, which is what makes sign and Top-K
// compression converge like SGD. The codec kernels do this in the encode pass itself (codec.hpp).
//
// Usage in a compressed collective: one ErrorFeedback per tensor handle (and one per reduced chunk on the "server"
// side of a two-phase allreduce); encode each chunk with its global offset.
//
// Owed corrections. With the sign codec the residual's update needs the chunk's scale, known only after a whole pass,
// so encode() leaves each chunk's residual at v = x + r and records the scale it still owes (Codec::encodeOwing);
// the next encode of the same chunk applies it while it reads the residual, which saves a second pass over the
// residual on every call. Whoever looks at the residual (residual(), serialize()) sees it settled; an encode of a
// chunk that overlaps owed chunks but is not one of them settles those first.
//
// Checkpointing: serialize() gives a self-describing byte vector (magic, version, n, residual, checksum) that
// deserialize() restores, so training restarts keep the residual.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "compress/codec.hpp"

namespace tern::compress {

class ErrorFeedback {
 public:
  // A zero residual for a tensor of n elements.
  explicit ErrorFeedback(size_t n = 0) : residual_(n, 0.0f) {}

  size_t size() const { return residual_.size(); }

  // Zeroes the residual (e.g. after the optimizer state is reset).
  void reset();

  // Resizes to n elements, all zero.
  void resize(size_t n);

  // Encodes the chunk of `count` elements at global offset ctx.offset (in points at that chunk) with the matching
  // slice of the residual; returns the payload size (codec.encode's result). Throws ternInvalidArgument when the
  // chunk lies outside the tensor.
  size_t encode(const Codec& codec, const void* in, ternDataType_t dtype, size_t count, void* payload,
                const EncodeContext& ctx);

  // The residual, every owed correction settled first (a later encode may leave corrections owed again).
  std::span<float> residual();

  // Checkpoint form: "TERNEF" magic, u16 version, u64 n, n fp32 values, u64 FNV-1a checksum of the values
  // (little-endian).
  std::vector<uint8_t> serialize() const;

  // Restores a serialize() result (any size; this object takes its n). Throws ternInvalidArgument for truncated or
  // corrupted data, leaving the state unchanged.
  void deserialize(std::span<const uint8_t> bytes);

 private:
  struct Owed {
    size_t count;  // the chunk's elements
    float scale;   // settleSignCorrection's scale
  };
  using OwedMap = std::map<uint64_t, Owed>;  // by the chunk's first element; chunks never overlap

  // Settles (and forgets) every owed chunk that overlaps [offset, offset + count), except `keep`.
  void settleOverlapping(uint64_t offset, size_t count, OwedMap::const_iterator keep);

  std::vector<float> residual_;
  OwedMap owed_;
};

}  // namespace tern::compress
