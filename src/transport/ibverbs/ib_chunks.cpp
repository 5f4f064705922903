#include "transport/ibverbs/ib_chunks.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/error.hpp"

namespace tern::ib {

// Headers are copied as host-order integers; every platform tern builds for is little-endian.
static_assert(std::endian::native == std::endian::little, "slot headers assume a little-endian host");
static_assert(sizeof(SlotHeader) == kSlotHeaderBytes);

void writeSlotHeader(void* slot, const SlotHeader& h) { std::memcpy(slot, &h, sizeof(h)); }

SlotHeader readSlotHeader(const void* slot) {
  SlotHeader h;
  std::memcpy(&h, slot, sizeof(h));
  return h;
}

ChunkCursor::ChunkCursor(uint64_t sequence, size_t bytes, size_t payloadPerSlot)
    : sequence_(sequence), bytes_(bytes), payload_(payloadPerSlot) {
  if (payload_ == 0) throwError(ternInternalError, "ibverbs: slot has no room for payload");
  size_t n = bytes == 0 ? 1 : (bytes + payload_ - 1) / payload_;
  if (n > 0xffffffffu) throwError(ternInvalidArgument, "ibverbs: message of %zu bytes has too many chunks", bytes);
  count_ = static_cast<uint32_t>(n);
}

Chunk ChunkCursor::peek() const {
  Chunk c;
  c.index = next_;
  c.count = count_;
  c.offset = static_cast<size_t>(next_) * payload_;
  c.length = c.offset >= bytes_ ? 0 : std::min(payload_, bytes_ - c.offset);
  return c;
}

SlotHeader ChunkCursor::header() const {
  Chunk c = peek();
  SlotHeader h;
  h.sequence = sequence_;
  h.totalBytes = bytes_;
  h.chunk = c.index;
  h.chunks = c.count;
  h.bytes = static_cast<uint32_t>(c.length);
  return h;
}

void checkChunk(const SlotHeader& got, const ChunkCursor& expect, int rank, int peer) {
  if (got.magic != kSlotMagic) {
    throwError(ternInternalError, "ibverbs: rank %d: damaged chunk header from rank %d", rank, peer);
  }
  if (got.sequence != expect.sequence()) {
    throwError(ternInternalError, "ibverbs: rank %d: stream from rank %d out of step (message %llu, expected %llu)",
               rank, peer, static_cast<unsigned long long>(got.sequence),
               static_cast<unsigned long long>(expect.sequence()));
  }
  if (got.totalBytes != expect.bytes()) {
    throwError(ternInvalidUsage,
               "rank %d: rank %d sent a message of %llu bytes where %zu were expected (did the ranks call the same "
               "collective with the same count, datatype and root?)",
               rank, peer, static_cast<unsigned long long>(got.totalBytes), expect.bytes());
  }
  Chunk want = expect.peek();
  if (got.chunk != want.index || got.chunks != want.count || got.bytes != want.length) {
    throwError(ternInternalError,
               "ibverbs: rank %d: chunk %u/%u (%u bytes) from rank %d where chunk %u/%u (%zu bytes) was expected "
               "(protocol error)",
               rank, got.chunk, got.chunks, got.bytes, peer, want.index, want.count, want.length);
  }
}

uint32_t encodeImm(ImmKind kind, uint32_t value) {
  if (value > 0x7fffffffu) throwError(ternInternalError, "ibverbs: immediate value %u out of range", value);
  return (kind == ImmKind::kCredits ? 0x80000000u : 0u) | value;
}

ImmKind immKind(uint32_t imm) { return (imm & 0x80000000u) != 0 ? ImmKind::kCredits : ImmKind::kData; }

uint32_t immValue(uint32_t imm) { return imm & 0x7fffffffu; }

}  // namespace tern::ib
