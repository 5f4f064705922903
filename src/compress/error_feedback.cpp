#include "compress/error_feedback.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/error.hpp"
#include "compress/sign_codec.hpp"

namespace tern::compress {
namespace {

static_assert(std::endian::native == std::endian::little, "checkpoint format assumes a little-endian host");

constexpr char kMagic[6] = {'T', 'E', 'R', 'N', 'E', 'F'};
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderBytes = sizeof kMagic + sizeof(uint16_t) + sizeof(uint64_t);

uint64_t fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

void ErrorFeedback::reset() {
  std::fill(residual_.begin(), residual_.end(), 0.0f);
  owed_.clear();
}

void ErrorFeedback::resize(size_t n) {
  residual_.assign(n, 0.0f);
  owed_.clear();
}

std::span<float> ErrorFeedback::residual() {
  settleOverlapping(0, residual_.size(), owed_.cend());
  return residual_;
}

void ErrorFeedback::settleOverlapping(uint64_t offset, size_t count, OwedMap::const_iterator keep) {
  // The first candidate is the last chunk that starts at or before offset (it may reach into the range).
  auto it = owed_.upper_bound(offset);
  if (it != owed_.begin()) --it;
  while (it != owed_.end() && it->first < offset + count) {
    if (it == keep || it->first + it->second.count <= offset) {
      ++it;
      continue;
    }
    settleSignCorrection(residual_.data() + it->first, it->second.count, it->second.scale);
    it = owed_.erase(it);
  }
}

size_t ErrorFeedback::encode(const Codec& codec, const void* in, ternDataType_t dtype, size_t count, void* payload,
                             const EncodeContext& ctx) {
  if (ctx.offset > residual_.size() || count > residual_.size() - ctx.offset) {
    throwError(ternInvalidArgument,
               "error feedback: chunk [%llu, %llu) is outside the tensor of %zu elements (codec %s)",
               static_cast<unsigned long long>(ctx.offset), static_cast<unsigned long long>(ctx.offset) + count,
               residual_.size(), codec.spec().c_str());
  }
  float* residual = residual_.data() + ctx.offset;
  if (!codec.canOweCorrection() || count == 0) {  // an empty chunk owes nothing (and would share a key)
    settleOverlapping(ctx.offset, count, owed_.cend());
    return codec.encode(in, dtype, count, payload, ctx, residual);
  }
  // The same chunk as an earlier encode: its owed correction is applied in this encode's pass.
  auto same = owed_.find(ctx.offset);
  if (same != owed_.end() && same->second.count != count) same = owed_.end();
  settleOverlapping(ctx.offset, count, same);
  std::optional<float> prior;
  if (same != owed_.end()) prior = same->second.scale;
  float owed = 0.0f;
  const size_t bytes = codec.encodeOwing(in, dtype, count, payload, residual, prior, &owed);
  owed_.insert_or_assign(ctx.offset, Owed{count, owed});
  return bytes;
}

std::vector<uint8_t> ErrorFeedback::serialize() const {
  const size_t valueBytes = residual_.size() * sizeof(float);
  std::vector<uint8_t> out(kHeaderBytes + valueBytes + sizeof(uint64_t));
  uint8_t* p = out.data();
  std::memcpy(p, kMagic, sizeof kMagic);
  std::memcpy(p + sizeof kMagic, &kVersion, sizeof kVersion);
  uint64_t n = residual_.size();
  std::memcpy(p + sizeof kMagic + sizeof kVersion, &n, sizeof n);
  if (valueBytes > 0) {
    // The settled residual, without settling this object's own (serialize does not change what it saves).
    std::vector<float> settled(residual_);
    for (const auto& [offset, owed] : owed_) settleSignCorrection(settled.data() + offset, owed.count, owed.scale);
    std::memcpy(p + kHeaderBytes, settled.data(), valueBytes);
  }
  uint64_t sum = fnv1a(p + kHeaderBytes, valueBytes);
  std::memcpy(p + kHeaderBytes + valueBytes, &sum, sizeof sum);
  return out;
}

void ErrorFeedback::deserialize(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes + sizeof(uint64_t) || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    throwError(ternInvalidArgument, "error feedback checkpoint: not a tern residual (%zu bytes, bad magic or size)",
               bytes.size());
  }
  uint16_t version;
  uint64_t n;
  std::memcpy(&version, bytes.data() + sizeof kMagic, sizeof version);
  std::memcpy(&n, bytes.data() + sizeof kMagic + sizeof version, sizeof n);
  if (version != kVersion) {
    throwError(ternInvalidArgument, "error feedback checkpoint: version %u is not supported (expected %u)", version,
               kVersion);
  }
  const size_t payload = bytes.size() - kHeaderBytes - sizeof(uint64_t);
  if (n > payload / sizeof(float) || n * sizeof(float) != payload) {
    throwError(ternInvalidArgument, "error feedback checkpoint: %zu bytes of values do not hold %llu elements", payload,
               static_cast<unsigned long long>(n));
  }
  uint64_t sum;
  std::memcpy(&sum, bytes.data() + kHeaderBytes + payload, sizeof sum);
  if (sum != fnv1a(bytes.data() + kHeaderBytes, payload)) {
    throwError(ternInvalidArgument, "error feedback checkpoint: checksum mismatch (corrupted data)");
  }
  std::vector<float> values(n);
  if (payload > 0) std::memcpy(values.data(), bytes.data() + kHeaderBytes, payload);
  residual_ = std::move(values);
  owed_.clear();
}

}  // namespace tern::compress
