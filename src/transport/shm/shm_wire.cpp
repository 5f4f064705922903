#include "transport/shm/shm_wire.hpp"

#include <cstdint>
#include <cstring>

#include "base/error.hpp"

namespace tern::shm::wire {

bool isSegmentName(const std::string& name) {
  if (name.size() < 2 || name.size() >= kNameBytes || name[0] != '/') return false;
  for (size_t i = 1; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return false;
  }
  return true;
}

Hello decodeHello(const void* data, size_t bytes, int peer, const Layout& layout) {
  if (bytes != sizeof(Hello)) {
    throwError(ternRemoteError, "rank %d sent a shared-memory announcement of %zu bytes (expected %zu)", peer, bytes,
               sizeof(Hello));
  }
  Hello h;
  std::memcpy(&h, data, sizeof(h));
  if (h.magic != kHelloMagic || h.rank != static_cast<uint32_t>(peer)) {
    throwError(ternRemoteError, "rank %d sent a malformed shared-memory announcement", peer);
  }
  if (h.bytes == 0) {
    h.name[0] = '\0';
    return h;
  }
  if (h.bytes != layout.totalBytes) {
    throwError(ternRemoteError,
               "rank %d announced a segment of %llu bytes, the layout for %d ranks has %zu (different tern version?)",
               peer, static_cast<unsigned long long>(h.bytes), layout.nranks, layout.totalBytes);
  }
  if (std::memchr(h.name, '\0', sizeof(h.name)) == nullptr || !isSegmentName(h.name)) {
    throwError(ternRemoteError, "rank %d announced a segment without a valid name", peer);
  }
  if (h.pid == 0 || h.pid > static_cast<uint32_t>(INT32_MAX) || h.token == 0) {
    throwError(ternRemoteError, "rank %d announced an invalid process (pid %u)", peer, h.pid);
  }
  return h;
}

std::vector<uint8_t> decodeOutcomes(const void* data, size_t bytes, int nranks, int peer) {
  if (nranks < 1 || bytes != static_cast<size_t>(nranks)) {
    throwError(ternRemoteError, "rank %d sent a shared-memory outcome of %zu bytes (expected %d)", peer, bytes, nranks);
  }
  std::vector<uint8_t> out(bytes);
  std::memcpy(out.data(), data, bytes);
  for (size_t r = 0; r < out.size(); ++r) {
    if ((out[r] & ~kOutcomeMask) != 0) {
      throwError(ternRemoteError, "rank %d sent a malformed shared-memory outcome for rank %zu (0x%02x)", peer, r,
                 static_cast<unsigned>(out[r]));
    }
  }
  return out;
}

void checkSegmentHeader(const SegmentHeader& h, const Hello& hello, int peer, const Layout& layout) {
  if (h.magic != kSegmentMagic || h.version != kLayoutVersion || h.nranks != static_cast<uint32_t>(layout.nranks) ||
      h.rank != static_cast<uint32_t>(peer) || h.pid != hello.pid || h.processToken != hello.token ||
      h.totalBytes != layout.totalBytes) {
    throwError(ternRemoteError, "segment %.*s of rank %d does not match its announcement (different tern version?)",
               static_cast<int>(strnlen(hello.name, sizeof(hello.name))), hello.name, peer);
  }
}

SlotHeader readSlotHeader(const void* slot) {
  SlotHeader h;
  std::memcpy(&h, slot, sizeof(h));
  return h;
}

void checkSlotHeader(const SlotHeader& h, bool started, size_t recvBytes, size_t offset, size_t payloadCap, int rank,
                     int peer) {
  const uint32_t kind = static_cast<uint32_t>(h.kind);
  if (kind != static_cast<uint32_t>(SlotKind::kFirst) && kind != static_cast<uint32_t>(SlotKind::kMore) &&
      kind != static_cast<uint32_t>(SlotKind::kRendezvous)) {
    throwError(ternInternalError, "rank %d: corrupted shared-memory slot from rank %d (unknown kind %u)", rank, peer,
               kind);
  }
  const bool first = h.kind != SlotKind::kMore;
  if (first == started || offset > recvBytes) {
    throwError(ternInternalError, "rank %d: shared-memory ring from rank %d out of step (slot kind %u)", rank, peer,
               kind);
  }
  if (first && h.msgBytes != recvBytes) {
    throwError(ternInvalidUsage, "rank %d: a message of %llu bytes from rank %d matched a receive of %zu bytes", rank,
               static_cast<unsigned long long>(h.msgBytes), peer, recvBytes);
  }
  if (h.kind == SlotKind::kRendezvous) {
    if (h.bytes != 0) {
      throwError(ternInternalError, "rank %d: corrupted shared-memory rendezvous slot from rank %d (%u payload bytes)",
                 rank, peer, h.bytes);
    }
    return;
  }
  // A correct producer fills every slot of a message but the last completely, so the size is known exactly.
  const size_t remaining = recvBytes - offset;
  const size_t want = remaining < payloadCap ? remaining : payloadCap;
  if (h.bytes != want) {
    throwError(ternInternalError,
               "rank %d: corrupted shared-memory slot from rank %d: %u payload bytes where %zu were due (%zu of a "
               "%zu-byte message left)",
               rank, peer, h.bytes, want, remaining, recvBytes);
  }
}

void checkBufferRef(const BufferRef& ref, size_t bytes, int rank, int peer) {
  if (ref.mode != BufferMode::kStaged && ref.mode != BufferMode::kDirect) {
    throwError(ternInternalError, "rank %d: corrupted buffer descriptor from rank %d (mode %u)", rank, peer,
               static_cast<unsigned>(ref.mode));
  }
  if (ref.mode != BufferMode::kDirect || ref.segId == 0) return;
  if (ref.fd < 0 || ref.segBytes == 0 || ref.offset > ref.segBytes || bytes > ref.segBytes - ref.offset) {
    throwError(ternInternalError,
               "rank %d: corrupted buffer descriptor from rank %d: %zu bytes at offset %llu of a %llu-byte segment "
               "(fd %d)",
               rank, peer, bytes, static_cast<unsigned long long>(ref.offset),
               static_cast<unsigned long long>(ref.segBytes), static_cast<int>(ref.fd));
  }
}

uint64_t checkBlockInBuffer(const BufferRef& ref, uint64_t addr, size_t bytes, int rank, int peer) {
  // Only a registered segment is mapped: any other descriptor would have this rank read its own memory at addr.
  const uint64_t at = addr - ref.addr;
  if (ref.mode != BufferMode::kDirect || ref.segId == 0 || addr < ref.addr || at > ref.segBytes ||
      bytes > ref.segBytes - at) {
    throwError(ternInternalError, "rank %d: corrupted descriptor from rank %d (block of %zu bytes outside its buffer)",
               rank, peer, bytes);
  }
  checkBufferRef(ref, at + bytes, rank, peer);
  return at;
}

}  // namespace tern::shm::wire
