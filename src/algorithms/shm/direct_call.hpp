// Per-call state shared by the direct (shared-memory) collectives, and the flag/slot helpers they are written in.
//
// The flags are cumulative counters in each rank's control block (shm_layout.hpp), advanced identically by every
// rank because every rank runs the same calls in the same order with the same chunking:
//   small  - one-phase calls whose input is posted (one line per call parity, with tiny inputs inline);
//   call   - pipelined calls whose descriptor (buffers, arguments) is posted;
//   in     - chunks whose input the rank has made readable (staged, or in place);
//   red    - chunks whose reduced slice the rank has made readable;
//   done   - chunks the rank has finished reading from its peers.
// A staging slot is reused kStageSlots chunks later, once every rank's `done` says it has finished with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/shm/shm_catalogue.hpp"
#include "base/error.hpp"
#include "exec/collective.hpp"
#include "transport/shm/flag_wait.hpp"
#include "transport/shm/mesh.hpp"

namespace tern::shm {

using FlagField = std::atomic<uint32_t> RankControl::*;

struct DirectCall {
  Mesh* mesh = nullptr;
  int rank = 0;
  int n = 0;
  const CollArgs* args = nullptr;
  const char* what = "collective";
  size_t esize = 0;
  int avgDivisor = 1;
  const char* in = nullptr;
  char* out = nullptr;
  WaitScope scope;
  char* tmp = nullptr;  // private scratch of kStageSlotBytes (accumulator when the output aliases an input)

  // Pipelined calls: chunking, and every rank's buffers as this rank sees them (nullptr: staged).
  uint32_t chunkBase = 0;  // global index of this call's first chunk
  uint32_t chunks = 0;
  size_t chunkElems = 0;
  bool streamOut = false;  // write the output with streaming stores (it is larger than the caches)
  bool inStaged = true;    // this rank's input goes through its staging slots
  bool outStaged = true;   // this rank's results go through its staging slots
  std::vector<const char*> peerIn;
  std::vector<char*> peerOut;     // writable: registered buffers are mapped read-write, threads share memory
  bool allMapped = false;         // every rank's input and output are addressable by every rank (mapped_allreduce.cpp)
  std::vector<const void*> srcs;  // scratch for the reductions' source lists
  // CMA allreduce (every rank's buffers are ordinary and every rank can process_vm_readv every peer): the peers'
  // buffer addresses in their own address spaces, and a private buffer of cmaBytes for the pieces read.
  bool cma = false;
  std::vector<uint64_t> peerInAddr;
  std::vector<uint64_t> peerOutAddr;
  char* cmaBuf = nullptr;
  size_t cmaBytes = 0;
  std::vector<char> inlineFrom;  // alltoall: per peer, whether its blocks came inline in its slot
  // The error path's state (leaveAfterError), set before this rank posts the flag that shows peers its buffers
  // (entryFlag reaching entryValue: its descriptor or its table): entered, and whether peers may then touch this
  // rank's buffers (in place, mapped or by CMA) until every peer's `done` reaches releaseDone.
  bool entered = false;
  bool exposed = false;
  FlagField entryFlag = &RankControl::call;
  uint32_t entryValue = 0;
  uint32_t releaseDone = 0;

  // The CPU this rank runs on, read once per call and published with its posts (waiters spin only on another CPU);
  // a call is too short for a migration inside it to matter, and reading it per post costs more than the post.
  int myCpu = -1;

  RankControl& ctrl(int p) const { return mesh->ctrl(p); }
  char* stage(int p, uint32_t chunk) const { return mesh->stage(p, chunk); }

  void post(FlagField f, uint32_t value) const { postWord(ctrl(rank).*f, value); }
  void postWord(std::atomic<uint32_t>& word, uint32_t value) const {
    RankControl& c = ctrl(rank);
    const int cpu = myCpu >= 0 ? myCpu : currentCpu();
    if (c.cpu.load(std::memory_order_relaxed) != cpu) c.cpu.store(cpu, std::memory_order_relaxed);
    publish(word, value, c.flagWaiters);
  }
  // Waits until peer's flag f reaches target; label says what the flag means, for errors.
  void wait(int peer, FlagField f, uint32_t target, const char* label) const {
    waitWord(peer, ctrl(peer).*f, target, label);
  }
  void waitWord(int peer, const std::atomic<uint32_t>& word, uint32_t target, const char* label) const {
    RankControl& c = ctrl(peer);
    waitFlag(scope, PeerFlag{word, c.flagWaiters, c.cpu, peer}, target, [&] {
      return format("%s waiting for rank %d's %s (flag %u, want %u)", what, peer, label,
                    word.load(std::memory_order_relaxed), target);
    });
  }
  void waitAllPeers(FlagField f, uint32_t target, const char* label) const {
    for (int i = 1; i < n; ++i) wait((rank + i) % n, f, target, label);
  }
  // Before this rank writes into its staging slot for global chunk g: every rank is done with chunk g - slots.
  // `done` only grows, so what an earlier look saw still holds: calls in step read a peer's `done` line (written on
  // its core at the end of its last call, so a cache miss) once every kStageSlots calls instead of on every one.
  void acquireSlot(uint32_t g) const {
    const uint32_t target = g - kStageSlots + 1;
    bool released = seenDone.size() == static_cast<size_t>(n);
    for (int p = 0; released && p < n; ++p) released = p == rank || reached(seenDone[p], target);
    if (released) return;
    waitAllPeers(&RankControl::done, target, "release of a staging slot");
    seenDone.resize(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) seenDone[p] = ctrl(p).done.load(std::memory_order_acquire);
  }
  mutable std::vector<uint32_t> seenDone;  // every rank's `done` at this rank's last look (acquireSlot)

  // This rank is about to post entry = value; peers may then touch its buffers when exposesBuffers.
  void enter(FlagField entry, uint32_t value, uint32_t doneValue, bool exposesBuffers) {
    entered = true;
    exposed = exposesBuffers;
    entryFlag = entry;
    entryValue = value;
    releaseDone = doneValue;
  }
  // After the exchange that shows every rank's buffers, before touching any peer's: a peer that has left the call
  // with an error (and may have given its buffers back to its caller) is an error here, not memory to touch. The
  // post before and this check pair with leaveAfterError's `left` then entry-flag check (sequentially consistent on
  // both sides): either this rank sees `left`, or the leaving rank sees this rank entered and waits for it.
  void refuseIfAPeerLeft() const;
  // The error path of a call this rank entered: raises `left` (this thread touches no peer's buffers any more: every
  // rank's error is fatal to the communicator past that point), then, if it exposed its buffers, waits until no peer
  // can still touch them: every peer that entered the call has posted `done`
  // past releaseDone, left too, or is a process that died; bounded by the communicator's timeout from now (by the
  // call's deadline for a peer process stopped by a signal). Never throws; the caller rethrows its error.
  void leaveAfterError() const;

  // Reads bytes at addr in rank p's address space into dst by CMA (process_vm_readv); throws ternSystemError
  // naming what was read (label) when the kernel refuses.
  void cmaReadPeer(int p, void* dst, uint64_t addr, size_t bytes, const char* label) const;
  // Writes bytes from src to addr in rank p's address space by CMA (process_vm_writev); throws like cmaReadPeer.
  void cmaWritePeer(int p, uint64_t addr, const void* src, size_t bytes, const char* label) const;
  // The end of the one-pass (CMA and mapped) algorithms: posts `done` for the whole call and waits for every peer's,
  // since peers read or write this rank's buffers until then.
  void finishOnePass() const;

  // Chunk j of the call covers elements [chunkBegin(j), chunkEnd(j)) of the per-rank range (count elements).
  size_t chunkBegin(uint32_t j) const { return static_cast<size_t>(j) * chunkElems; }
  size_t chunkEnd(uint32_t j) const { return std::min(args->count, chunkBegin(j) + chunkElems); }
};

// Slice i (of n) of a chunk of len elements: [sliceBegin(i), sliceBegin(i + 1)). Boundaries are rounded down to a
// cache line so that two ranks never write one line of a shared staging slot.
inline size_t sliceBegin(size_t len, int i, int n, size_t esize) {
  if (i >= n) return len;
  size_t perLine = esize >= kLine ? 1 : kLine / esize;
  size_t b = len * static_cast<size_t>(i) / static_cast<size_t>(n);
  return b / perLine * perLine;
}

// dst = srcs[0] op srcs[1] op ... op srcs[n-1], in that order for every element (so every rank that reduces a given
// element gets the same bits), then divided by divisor for ternAvg. dst may be any one of the sources exactly:
// when it is srcs[k] with k >= 2, the running result goes through tmp so that srcs[k] is read before it is
// overwritten.
void reduceInOrder(void* dst, const void* const* srcs, int n, size_t count, ternDataType_t dtype, ternRedOp_t op,
                   int avgDivisor, void* tmp);

// A key of the arguments every rank must agree on, to refuse mismatched calls instead of computing garbage.
uint64_t argsKey(const CollArgs& a);

// The collectives (one file each). Small: one phase through the small areas; pipelined: chunks through staging
// slots or in place; CMA and mapped: one-pass allreduces of ordinary and of directly addressable buffers.
void smallCollective(DirectCall& c, uint32_t seq);
void pipelinedAllReduce(DirectCall& c);
void cmaAllReduce(DirectCall& c);
void cmaReduce(DirectCall& c);
// Reduce-scatter: rank r reads block r of every peer's input and reduces it into its output (cma_allreduce.cpp).
void cmaReduceScatter(DirectCall& c);
void mappedAllReduce(DirectCall& c);
void pipelinedReduceScatter(DirectCall& c);
void pipelinedAllGather(DirectCall& c);
void cmaAllGather(DirectCall& c);
void pipelinedBroadcast(DirectCall& c);
void cmaBroadcast(DirectCall& c);
void pipelinedReduce(DirectCall& c);

// All-to-all and alltoallv (direct_alltoall.cpp): one table exchange through the staging slots, then the blocks
// inline from the slots, read in place or by CMA, or staged in rounds, as every rank's table decides alike. Uses
// global chunks from chunkSeq on (advanced past them); unforced, a rank sends inline up to shmAlltoAllInlineLimit.
// Returns what ran: kSmall (every block inline), kCma or
// kMapped (read from the senders' buffers by CMA or in place), kPipelined (staged).
class DirectCollectives;
struct AlltoAllForms {
  ShmAlgorithm forced = ShmAlgorithm::kNone;  // TERN_ALGO's entry: exactly that form, or an error on every rank
  bool allowCma = true;
  // Alltoallv, learning: this rank's CMA offer per size band (CmaLearner::offers) instead of allowCma; the call takes
  // the bit of its mean input bytes per rank over every rank, stored in *meanInputBytes.
  bool offersByBand = false;
  uint64_t cmaOffers = 0;
  size_t* meanInputBytes = nullptr;
  bool allowMapped = true;
  // Out of place, blocks past the inline limit that fit a slot go inline where this rank takes no one-pass form
  // (where the host's ranks own their CPUs: with more ranks than CPUs, staging them in rounds measured faster).
  bool inlinePastLimit = false;
  // Describes and maps registered (ternMemAlloc) inputs: when every rank's input is one, blocks are copied once,
  // straight out of the sender's buffer mapped here, with no kernel copy (null: never).
  DirectCollectives* registered = nullptr;
};
ShmAlgorithm directAlltoAll(DirectCall& c, const AlltoAllForms& forms, uint32_t& chunkSeq);
// Bytes a rank sends to its peers in an all-to-all(v), and what fits one staging slot beside the table.
size_t alltoallPeerBytes(const CollArgs& a, int rank, int nranks);
size_t alltoallInlineCapacity(int nranks);
// Block parts written by their senders so far in this process (tests check that uneven calls balance).
uint64_t alltoallPushesForTesting();

}  // namespace tern::shm
