// The layout of one rank's shared-memory segment. Every rank of a host creates one and maps all of its peers'; the
// layout depends only on the rank count, so every rank computes the same offsets (and the header records them, so a
// peer built from a different tern version is refused instead of misread).
//
//   header | control | small area (2 halves) | staging (kStageSlots slots) | FIFO rings, one per peer
//
// Cache lines: everything one rank writes and others poll sits on lines that no other rank writes, so that a
// poller's line is invalidated only when there is news; the few words that peers write (waiter counts, doorbell,
// ring tails) have lines of their own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tern::shm {

constexpr uint64_t kSegmentMagic = 0x6d68732d6e726574ull;  // "tern-shm"
// 2: RankControl::left; 3: RingHeader::reading; 4: slots carry their sequence number (no ring head);
// 5: RingHeader::rendezvousBands; 6: the all-to-all table's header carries CMA offers by band;
// 7: RankControl::cacheProbe
constexpr uint32_t kLayoutVersion = 7;
constexpr size_t kLine = 64;
constexpr size_t kPage = 4096;

// Small (one-phase) collectives: every rank's whole input fits one half of its small area; consecutive small calls
// alternate halves so that a fast rank can fill the next half while slow peers still read the previous one.
constexpr size_t kSmallBytes = 256 * 1024;
// Pipelined collectives: a ring of staging slots per rank. A slot is reused kStageSlots chunks later, after every
// peer has reported that chunk done.
constexpr int kStageSlots = 4;
constexpr size_t kStageSlotBytes = 256 * 1024;
// Allreduces, allgathers and broadcasts of ordinary buffers from their minimum (shmCmaMinBytes, shm_catalogue.hpp;
// TERN_SHM_CMA_MIN_BYTES) to kCmaMaxBytes input bytes per rank read peers by CMA instead of staging. Measured, 2 ranks
// out of place: allreduce 1-16 MiB 7.0-7.6 GB/s against 5.4-6.3 staged (10.7-11.1 with huge pages); allgather
// 4-16 MiB 13-13.7 against 8.7-9.5 algbw, broadcast 15-16.8 against 7-8. From 32 MiB the staged pipelines are
// faster (allreduce 6.2 vs 3.9-5.2, allgather at 64 MiB 8.0 vs 6.7-7.0): their chunks keep what they copy in cache.
// The minimums on 2 ranks, per rank's input (shmCmaMinBytes has the rule from 3 ranks): one-phase and staged forms
// against CMA, 2 ranks, allreduce 32 KB-512 KB 1.2-2x faster by CMA, allgather and broadcast 16-128 KB 1.3-2x.
constexpr size_t kCmaAllReduceMinBytes = 32 * 1024;
constexpr size_t kCmaGatherMinBytes = 8 * 1024;
constexpr size_t kCmaMaxBytes = 16 * 1024 * 1024;
// The CMA allreduce's private buffer: pieces read from the peers (one part per peer). Every piece costs a system
// call per peer and direction; measured best at 256 KiB (2 ranks, 4 MiB: 7.9 GB/s; 32 KiB 6.6, 1 MiB 6.5).
constexpr size_t kCmaBufferBytes = 256 * 1024;
// The one-pass allreduce of mapped buffers writes peers' outputs with streaming stores above this many bytes per
// rank, out of place (mapped_allreduce.cpp).
constexpr size_t kMappedStreamingBytes = 16 * 1024 * 1024;
// FIFO rings (point-to-point): fixed-size slots; the ring per peer shrinks with the rank count so that the
// segment stays a few MiB on big hosts.
constexpr size_t kRingSlotBytes = 32 * 1024;
// Point-to-point messages from this size may go by rendezvous (the receiver reads the sender's buffer with one
// kernel copy). Below a ring slot they start staged on every host, since a rendezvous' fixed cost (a round trip and
// a system call) outweighs one slot's two copies where the ranks' CPUs share a cache; where they do not, staging's
// cross-CPU copies cost more and the receiver's learner (rendezvous_learner.hpp) switches them.
constexpr size_t kRendezvousMinBytes = 8 * 1024;

inline size_t alignUp(size_t x, size_t a) { return (x + a - 1) / a * a; }

// How the owner passes a buffer in the current call.
enum class BufferMode : uint32_t {
  kStaged = 0,  // copied through the owner's staging slots
  kDirect = 1,  // peers read it in place (inputs; allreduce results): same process, or a registered segment they map
};

// A buffer as peers see it: its address in the owner's process (valid for peers in the same process) and, for
// registered (ternMemAlloc) memory, the segment to map and the offset within it.
struct BufferRef {
  uint64_t addr = 0;
  uint64_t segId = 0;  // 0: ordinary memory
  uint64_t offset = 0;
  uint64_t segBytes = 0;
  uint64_t ino = 0;  // inode of the owner's memfd: checked after opening, so a reused fd number is refused
  int32_t fd = -1;
  BufferMode mode = BufferMode::kStaged;
};

// What a rank runs in its current pipelined call: peers check that the arguments agree and find its buffers.
struct CallDesc {
  uint32_t call = 0;
  uint32_t coll = 0;
  uint32_t dtype = 0;
  uint32_t op = 0;
  int32_t root = 0;
  uint32_t pad = 0;  // allreduce: 1 when this rank offers the CMA path (direct_collectives.cpp)
  uint64_t count = 0;
  BufferRef in;
  BufferRef out;
};

struct SegmentHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t nranks;
  uint32_t rank;
  uint32_t pid;
  uint64_t processToken;  // equal tokens: same address space
  uint64_t totalBytes;
  // CMA probe: peers read 8 bytes at cmaProbeAddr (owner's private memory) with process_vm_readv and compare them
  // with cmaCookie.
  uint64_t cmaCookie;
  uint64_t cmaProbeAddr;
  // Registered-buffer probe: a memfd in the owner's process that peers try to open as /proc/<pid>/fd/<probeFd>.
  int32_t probeFd;
  uint32_t pad;
  uint64_t probeIno;
};

// The flag of a one-phase (small) call, by call parity, with the call's arguments key and count and, for inputs
// of up to kInlineBytes, the input itself: a tiny collective then costs each peer a single cache-line transfer.
constexpr size_t kInlineBytes = kLine - 24;
struct alignas(kLine) SmallLine {
  std::atomic<uint32_t> seq;  // small calls posted (this line holds the calls of its parity)
  uint32_t pad;
  uint64_t argsKey;  // the call's collective/count/dtype/op/root: a mismatch between ranks is an error, not garbage
  uint64_t count;    // the call's element count, for the mismatch error's message
  char payload[kInlineBytes];
};

struct RankControl {
  // Written by the owner only: progress of the direct collectives (cumulative counters).
  alignas(kLine) SmallLine small[2];
  alignas(kLine) std::atomic<uint32_t> call;  // pipelined calls whose descriptor is posted
  std::atomic<uint32_t> in;                   // chunks whose input is readable
  std::atomic<uint32_t> red;                  // chunks whose owner slice is reduced and readable
  std::atomic<uint32_t> done;                 // chunks the owner has finished with
  std::atomic<int32_t> cpu;                   // CPU the owner last posted from (-1: unknown); see flag_wait.hpp
  // Written by waiters: how many sleep on a flag above.
  alignas(kLine) std::atomic<uint32_t> flagWaiters;
  // FIFO doorbell: peers ring it after producing into or consuming from a ring shared with the owner.
  alignas(kLine) std::atomic<uint32_t> doorbell;
  alignas(kLine) std::atomic<uint32_t> doorbellWaiters;
  // Non-zero once the owner's shared-memory transport was aborted: peers fail at once instead of waiting.
  alignas(kLine) std::atomic<uint32_t> aborted;
  // Non-zero once the owner left a direct collective with an error (direct_call.hpp, leaveAfterError), or a failed
  // call with a rendezvous send pending (shm_transport.cpp, withdrawAfterFailure): from then on it touches no peer's
  // buffers, and no peer may start touching its own. Unlike `aborted`, which another thread of
  // the owner may raise while its calling thread is still copying, this is raised by the calling thread itself.
  alignas(kLine) std::atomic<uint32_t> left;
  alignas(kLine) CallDesc desc[2];  // by call parity
  // Written by a peer during setup only: the cache-line round trips of the cache sharing probe
  // (cache_sharing_probe.hpp); the lowest local rank writes into its peers' line, each peer echoes into the lowest's.
  alignas(kLine) std::atomic<uint32_t> cacheProbe;
};

struct alignas(kLine) RingIndex {
  std::atomic<uint64_t> value;
};

// A ring's slots say themselves whether they are filled (SlotHeader::seq), so the consumer polls the line it is
// about to read and no separate "produced" index crosses between the two CPUs per message.
struct RingHeader {
  RingIndex tail;  // slots consumed (written by the consumer)
  // Written by the consumer: 1 + the index of the rendezvous slot whose sender buffer it is reading, 0 otherwise.
  // A sender whose call failed raises RankControl::left and then waits for this to clear before its caller gets
  // the buffer back; a consumer publishes it before it looks at `left` (shm_transport.cpp, withdrawAfterFailure).
  RingIndex reading;
  // Written by the consumer: the form it asks for long messages, by size band (RendezvousLearner::published; 0:
  // the host's prior). Read by the producer for each message of at least the rendezvous size.
  RingIndex rendezvousBands;
};

enum class SlotKind : uint32_t { kFirst = 1, kMore = 2, kRendezvous = 3 };

struct alignas(kLine) SlotHeader {
  SlotKind kind;
  uint32_t bytes;     // payload bytes in this slot
  uint64_t msgBytes;  // whole message (kFirst, kRendezvous)
  uint64_t addr;      // kRendezvous: the sender's buffer, in the sender's address space
  // kFirst, kRendezvous of a long message: when the producer started it (steady clock, ns; 0 for short messages),
  // for the consumer's RendezvousLearner. Only a timing hint: never trusted beyond that.
  int64_t startNs;
  // 1 + the ring index of the slot's current contents, stored last (release) by the producer once the rest of the
  // slot is written: the consumer at index i reads the slot only when this is i + 1. Accessed through atomic_ref so
  // that the header stays a plain struct the consumer can copy.
  uint64_t seq;
};

struct Layout {
  int nranks = 0;
  size_t controlOffset = 0;
  size_t smallOffset = 0;
  size_t smallHalfBytes = 0;
  size_t stageOffset = 0;
  size_t ringsOffset = 0;
  size_t ringBytes = 0;  // one ring: header + slots
  uint32_t ringSlots = 0;
  size_t totalBytes = 0;
  size_t populateBytes = 0;  // touched at creation and mapped at once by peers

  static Layout forRanks(int nranks);
};

inline Layout Layout::forRanks(int nranks) {
  Layout l;
  l.nranks = nranks;
  l.controlOffset = kPage;
  l.smallOffset = alignUp(l.controlOffset + sizeof(RankControl), kPage);
  l.smallHalfBytes = kSmallBytes;
  l.stageOffset = alignUp(l.smallOffset + 2 * l.smallHalfBytes, kPage);
  l.ringsOffset = l.stageOffset + kStageSlots * kStageSlotBytes;
  // 1 MiB of ring per peer up to 5 peers, then a 4 MiB total shared out, never under 4 slots.
  size_t perPeer = nranks > 1 ? (4u << 20) / static_cast<size_t>(nranks - 1) : 0;
  if (perPeer > (1u << 20)) perPeer = 1u << 20;
  l.ringSlots = static_cast<uint32_t>(perPeer / kRingSlotBytes);
  if (l.ringSlots < 4) l.ringSlots = 4;
  l.ringBytes = sizeof(RingHeader) + l.ringSlots * kRingSlotBytes;
  l.totalBytes = alignUp(l.ringsOffset + static_cast<size_t>(nranks) * l.ringBytes, kPage);
  // All of it, rings included: the first pass of messages through a ring would otherwise fault page by page (the
  // owner allocating, each peer mapping), which costs the first long messages more than their copies, and a size
  // that changes form (RendezvousLearner) meets untouched slots long after the start.
  l.populateBytes = l.totalBytes;
  return l;
}

}  // namespace tern::shm
