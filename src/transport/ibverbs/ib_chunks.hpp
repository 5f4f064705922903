// How a message travels through a peer's receive ring: cut into chunks of at most one slot's payload, each slot
// starting with a 32-byte header that lets the receiver check it got the message it expects, and each RDMA write
// carrying a 32-bit immediate that says what it is.
//
// Slot header (little-endian): sequence u64 (the message's number in this direction), total bytes u64, chunk index
// u32, chunk count u32, this chunk's payload bytes u32, magic u32. A zero-byte message is one chunk with no
// payload, so every message is seen (and size-checked) by the receiver.
//
// Immediate (host order before htonl): bit 31 clear: a data chunk, bits 0..30 its slot; bit 31 set: a credit
// return, bits 0..30 the number of slots freed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern::ib {

inline constexpr size_t kSlotHeaderBytes = 32;
inline constexpr uint32_t kSlotMagic = 0x4b4e4843;  // "CHNK"

struct SlotHeader {
  uint64_t sequence = 0;
  uint64_t totalBytes = 0;
  uint32_t chunk = 0;
  uint32_t chunks = 0;
  uint32_t bytes = 0;
  uint32_t magic = kSlotMagic;
};

void writeSlotHeader(void* slot, const SlotHeader& h);
SlotHeader readSlotHeader(const void* slot);

// One chunk of a message: where its payload lies in the message.
struct Chunk {
  uint32_t index = 0;
  uint32_t count = 1;
  size_t offset = 0;
  size_t length = 0;
};

// Walks one message's chunks in order (the sender cuts with it; the receiver follows along to check).
class ChunkCursor {
 public:
  ChunkCursor(uint64_t sequence, size_t bytes, size_t payloadPerSlot);
  bool done() const { return next_ >= count_; }
  uint32_t count() const { return count_; }
  uint32_t position() const { return next_; }
  Chunk peek() const;
  void advance() { ++next_; }
  uint64_t sequence() const { return sequence_; }
  size_t bytes() const { return bytes_; }
  SlotHeader header() const;

 private:
  uint64_t sequence_;
  size_t bytes_;
  size_t payload_;
  uint32_t count_;
  uint32_t next_ = 0;
};

// Checks that a landed chunk is the one `expect` (the receive at the head of the queue) waits for. Throws
// tern::Error: ternInvalidUsage when the sizes differ (the ranks disagree about the call), ternInternalError when
// the stream is out of step or the header is damaged.
void checkChunk(const SlotHeader& got, const ChunkCursor& expect, int rank, int peer);

enum class ImmKind { kData, kCredits };
uint32_t encodeImm(ImmKind kind, uint32_t value);
ImmKind immKind(uint32_t imm);
uint32_t immValue(uint32_t imm);

}  // namespace tern::ib
