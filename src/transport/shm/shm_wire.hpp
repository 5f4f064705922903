// What same-host peers tell each other during shared-memory setup (over TCP) and afterwards (through the segments
// they map), and the checks every such input passes before it is used. A peer's bytes are input from another
// process: a corrupted or hostile value (a slot header claiming more bytes than the receive buffer holds, a mapped
// size larger than the file, an offset that overflows) becomes an error naming the peer, never a copy out of bounds.
// Public so that tests can corrupt them on purpose and fuzzers can feed the decoders (tests/fuzz/shm_wire_fuzz.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/shm/shm_layout.hpp"

namespace tern::shm::wire {

inline constexpr uint64_t kHelloMagic = 0x6f6c6c65682d6873ull;  // "sh-hello"
inline constexpr size_t kNameBytes = 200;

// Round 1: where to find the sender's segment (bytes 0: it has none).
struct Hello {
  uint64_t magic;
  uint64_t bytes;
  uint64_t token;
  uint32_t pid;
  uint32_t rank;
  char name[kNameBytes];
};

// Round 2, one byte per rank of the communicator: what the sender managed with that rank's segment.
enum OutcomeBits : uint8_t {
  kMapped = 1,  // mapped and validated (for the sender's own entry: everything it needed succeeded)
  kCma = 2,     // can process_vm_readv from that rank
  kFd = 4,      // can open that rank's memfds
  // The sender's own entry only: its kernel copies ran under kSlowKernelCopyRatio of memcpy (kernel_copy_probe.hpp).
  kSlowKernelCopies = 8,
};
inline constexpr uint8_t kOutcomeMask = kMapped | kCma | kFd | kSlowKernelCopies;

// A segment name as tern makes them (mesh.cpp: "/tern-<job tag>-r<rank>-p<pid>-<n>"): a leading slash, then only
// [A-Za-z0-9-], so that no peer can point shm_open at another path.
bool isSegmentName(const std::string& name);

// Round 1 message from peer (bytes long). Throws tern::Error(ternRemoteError) naming the peer when it is not a
// well-formed announcement for a segment of layout (or of none).
Hello decodeHello(const void* data, size_t bytes, int peer, const Layout& layout);
// Round 2 message from peer for a communicator of nranks ranks. Throws ternRemoteError when malformed.
std::vector<uint8_t> decodeOutcomes(const void* data, size_t bytes, int nranks, int peer);
// The header of peer's mapped segment against what the peer announced and the layout every rank computes. Throws
// ternRemoteError.
void checkSegmentHeader(const SegmentHeader& h, const Hello& hello, int peer, const Layout& layout);

// The next ring slot's header as the consumer copies it out of shared memory (once: the copy is what is checked
// and used, so a producer that rewrites it meanwhile cannot slip a value past the check).
SlotHeader readSlotHeader(const void* slot);
// A slot from peer for a receive of recvBytes of which offset are done; started: the message's first slot was
// consumed. payloadCap: payload bytes one slot holds. Throws ternInternalError naming rank and peer for a header no
// correct producer writes, and ternInvalidUsage when the message's size differs from the receive's.
void checkSlotHeader(const SlotHeader& h, bool started, size_t recvBytes, size_t offset, size_t payloadCap, int rank,
                     int peer);

// A peer's buffer descriptor for a call whose buffer is `bytes` long: the mode is known and a registered buffer's
// range lies within its segment (no overflow). Throws ternInternalError naming rank and peer.
void checkBufferRef(const BufferRef& ref, size_t bytes, int rank, int peer);
// A peer's block of bytes at addr (in its address space) that should lie inside the registered (kDirect, segId set)
// buffer ref it described: returns the block's offset from ref's start, once the block and ref are checked
// (checkBufferRef). Throws ternInternalError naming rank and peer otherwise.
uint64_t checkBlockInBuffer(const BufferRef& ref, uint64_t addr, size_t bytes, int rank, int peer);

}  // namespace tern::shm::wire
