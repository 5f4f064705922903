// All-to-all and alltoallv over shared memory, in one pass instead of the pairwise schedule's n - 1 rounds through the
// FIFO rings (MoE dispatch and combine exchange a few KB to a few hundred KB per peer, where every round's
// synchronisation costs more than the copy).
//
// Round 0 (the staging slot of global chunk g0): every rank writes a table (for every peer: the bytes it sends
// there, the bytes it expects from there, the address of the block it sends there) and, when every block it sends
// to a peer fits the slot, those blocks themselves (inline). Every rank then reads every rank's table, so all of them
// know every pair's sizes and capabilities and decide alike how the rest moves:
//   - inline blocks are copied out of the sender's slot (two copies, one synchronisation; no end barrier, since a
//     slot is reused only kStageSlots chunks later, after every rank has posted `done` for it);
//   - otherwise, when every rank can read every peer (threads of one process read in place; processes by CMA, or
//     by mapping the sender's input where every rank's input is registered ternMemAlloc memory, which needs no
//     kernel copy), every block moves in one copy straight from the sender's buffer into the receiver's: the
//     receiver reads it,
//     except where the sizes leave some ranks with far more to copy than others (uneven all-to-allv), where senders
//     write the leading part of their blocks into the receivers' buffers (alltoall_balance.hpp); then every rank
//     waits until every peer has finished with its buffers;
//   - otherwise the blocks go through the staging slots in rounds, each slot split into one region per receiver.
// In place, a rank whose blocks are read from its buffer (or staged from it in rounds) copies them to private scratch
// first, since it overwrites the buffer with what it receives while they are still needed; except an alltoall that
// can only be staged in rounds, each of which stages the bytes it then overwrites (stagedInPlace below). Its own
// block is copied before any peer's, so inline blocks need no scratch.
//
// Sizes that disagree between a sender and its receiver are an error on every rank (every rank checks every pair
// from the tables), not a hang or a short copy.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "algorithms/shm/alltoall_balance.hpp"
#include "algorithms/shm/cma_learner.hpp"
#include "algorithms/shm/direct_call.hpp"
#include "algorithms/shm/direct_collectives.hpp"
#include "base/copy_bytes.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "transport/shm/shm_wire.hpp"
#include "transport/shm/stream_copy.hpp"

namespace tern::shm {

namespace {

struct alignas(kLine) ExchangeHeader {
  uint64_t argsKey;
  uint32_t nranks;
  uint32_t flags;
  BufferRef input;     // kInputMapped: the sender's input as peers map it
  uint64_t cmaOffers;  // bit b: this rank offers the CMA form if the call's mean input per rank is in [2^b, 2^(b+1))
};
constexpr uint32_t kInline = 1;        // the blocks for peers follow the table, packed in peer order
constexpr uint32_t kReadsAll = 2;      // this rank can read every peer's memory (same process, or CMA)
constexpr uint32_t kSameProcess = 4;   // every peer shares this rank's address space
constexpr uint32_t kTakesWrites = 8;   // peers may write their blocks into this rank's output (one pass)
constexpr uint32_t kInputMapped = 16;  // this rank's input is registered memory every peer can map (header.input)

struct ExchangeEntry {
  uint64_t sendBytes;
  uint64_t recvBytes;
  uint64_t addr;      // of the block for this peer, in the sender's address space
  uint64_t recvAddr;  // where the block from this peer goes, in the receiver's address space
};

// Peer p's block at addr (in p's address space, bytes long) inside its registered input ref, as mapped here. The
// table and the descriptor are the peer's to write: a block outside the buffer it described is an error.
const char* mappedBlock(const DirectCall& c, DirectCollectives& registered, int p, const BufferRef& ref, uint64_t addr,
                        size_t bytes) {
  const uint64_t at = wire::checkBlockInBuffer(ref, addr, bytes, c.rank, p);
  return registered.resolve(p, ref, at + bytes) + at;
}

size_t tableBytes(int n) { return alignUp(sizeof(ExchangeHeader) + sizeof(ExchangeEntry) * n, kLine); }

const ExchangeHeader& headerOf(const DirectCall& c, int p, uint32_t g) {
  return *reinterpret_cast<const ExchangeHeader*>(c.stage(p, g));
}
const ExchangeEntry* tableOf(const DirectCall& c, int p, uint32_t g) {
  return reinterpret_cast<const ExchangeEntry*>(c.stage(p, g) + sizeof(ExchangeHeader));
}

size_t sendCount(const CollArgs& a, int q) { return a.coll == Collective::kAlltoAll ? a.count : a.sendCounts[q]; }
size_t recvCount(const CollArgs& a, int q) { return a.coll == Collective::kAlltoAll ? a.count : a.recvCounts[q]; }
size_t sendDispl(const CollArgs& a, int q) {
  return a.coll == Collective::kAlltoAll ? a.count * static_cast<size_t>(q) : a.sendDispls[q];
}
size_t recvDispl(const CollArgs& a, int q) {
  return a.coll == Collective::kAlltoAll ? a.count * static_cast<size_t>(q) : a.recvDispls[q];
}

std::atomic<uint64_t> gPushes{0};

// Private copy of an in-place caller's blocks, per thread (a rank runs its calls on one thread at a time): bytes
// past a page-aligned start where they sit at the same offset within a page as in the caller's buffer, so that the
// copy into it runs at memcpy's rate (copy_bytes.hpp: a destination a few bytes past its source modulo the page is
// copied by a slower loop, and malloc's blocks start 16 bytes past a page).
char* inPlaceScratch(const char* like, size_t bytes) {
  struct Scratch {
    std::unique_ptr<char, decltype(&std::free)> base{nullptr, &std::free};
    size_t capacity = 0;
  };
  thread_local Scratch scratch;
  const size_t offset = reinterpret_cast<uintptr_t>(like) & (kPage - 1);
  if (scratch.capacity < offset + bytes) {
    const size_t capacity = alignUp(offset + bytes, kPage);
    scratch.base.reset(static_cast<char*>(std::aligned_alloc(kPage, capacity)));
    if (!scratch.base) throwError(ternSystemError, "cannot allocate %zu bytes of all-to-all scratch", capacity);
    scratch.capacity = capacity;
  }
  return scratch.base.get() + offset;
}

[[noreturn]] void cannotRun(const DirectCall& c, ShmAlgorithm forced, const char* need) {
  throwError(ternInvalidUsage, "rank %d: TERN_ALGO=%s cannot run this %s: %s", c.rank, shmAlgorithmName(forced), c.what,
             need);
}

}  // namespace

size_t alltoallPeerBytes(const CollArgs& a, int rank, int nranks) {
  const size_t e = dataTypeSize(a.dtype);
  size_t bytes = 0;
  for (int q = 0; q < nranks; ++q) {
    if (q != rank) bytes += sendCount(a, q) * e;
  }
  return bytes;
}

uint64_t alltoallPushesForTesting() { return gPushes.load(); }

size_t alltoallInlineCapacity(int nranks) { return kStageSlotBytes - tableBytes(nranks); }

ShmAlgorithm directAlltoAll(DirectCall& c, const AlltoAllForms& forms, uint32_t& chunkSeq) {
  const CollArgs& a = *c.args;
  const int n = c.n, me = c.rank;
  const size_t e = c.esize;
  if (a.coll == Collective::kAlltoAllv &&
      (a.sendCounts.size() != static_cast<size_t>(n) || a.sendDispls.size() != static_cast<size_t>(n) ||
       a.recvCounts.size() != static_cast<size_t>(n) || a.recvDispls.size() != static_cast<size_t>(n))) {
    throwError(ternInvalidArgument, "rank %d: %s: counts and displacements need %d entries each", me, c.what, n);
  }
  if (a.coll == Collective::kAlltoAll && a.count == 0) return ShmAlgorithm::kSmall;  // the same on every rank
  const ShmAlgorithm forced = forms.forced;
  const uint32_t g0 = chunkSeq;

  // This rank's table, its capabilities and, when they fit, its blocks for peers.
  bool sameProcess = true, readsAll = true;
  for (int q : c.mesh->localPeers()) {
    sameProcess = sameProcess && c.mesh->peer(q).sameProcess;
    readsAll = readsAll && (c.mesh->peer(q).sameProcess || c.mesh->peer(q).cmaFrom);
  }
  const size_t peerBytes = alltoallPeerBytes(a, me, n);
  // Registered input between processes: peers can map it and read their blocks with a plain copy.
  BufferRef inputRef{};
  int mappable = -1;  // unknown until asked: small calls never ask
  auto inputMappable = [&] {
    if (mappable < 0) {
      mappable = !sameProcess && forms.registered != nullptr &&
                         forms.registered->zeroCopyFor(c.in, shmInputBytes(a, n), &inputRef) && inputRef.segId != 0
                     ? 1
                     : 0;
    }
    return mappable == 1;
  };
  // Inline up to the limit; past it (out of place) the blocks still fit the slot, and go inline where this rank takes
  // no one-pass form (neither CMA nor a mapped or shared input) and forms.inlinePastLimit: two copies through a slot
  // in the cache beat staging the same bytes in rounds, each with its own synchronisation. Each rank decides for its
  // own blocks; every mix of inline and other blocks runs (the tables say which is which).
  bool inlineMine = false;
  if (peerBytes <= alltoallInlineCapacity(n)) {
    if (forced != ShmAlgorithm::kNone) {
      inlineMine = forced == ShmAlgorithm::kSmall;
    } else if (peerBytes <= shmAlltoAllInlineLimit(a, n)) {
      inlineMine = true;
    } else if (forms.inlinePastLimit) {
      const bool offersCma =
          forms.offersByBand ? CmaLearner::offered(forms.cmaOffers, peerBytes + sendCount(a, me) * e) : forms.allowCma;
      inlineMine = !(sameProcess ? forms.allowMapped : offersCma || inputMappable());
    }
  }
  // In place, blocks that peers read from this rank's buffer go to private scratch first, except where they can only
  // be staged in rounds (stagedInPlace): round k stages bytes [k * piece, (k + 1) * piece) of every block before it
  // overwrites those bytes of the blocks it receives, which in place are the same blocks, so the buffer itself
  // serves. That holds for an alltoall between processes whose CMA form this rank declines: it then neither offers
  // CMA nor maps its input, which keeps every rank off the one-pass form, and every rank's blocks are inline or
  // none are (the same sizes everywhere).
  const bool stagedInPlace = a.coll == Collective::kAlltoAll && c.in == c.out && !inlineMine && !sameProcess &&
                             !forms.allowCma && forced != ShmAlgorithm::kCma && forced != ShmAlgorithm::kMapped;
  const char* src = c.in;
  size_t srcBase = 0;  // element offset of src within the caller's input
  if (!inlineMine && !stagedInPlace && (c.in == c.out || a.inPlace)) {
    size_t lo = SIZE_MAX, hi = 0;
    for (int q = 0; q < n; ++q) {
      if (sendCount(a, q) == 0) continue;
      lo = std::min(lo, sendDispl(a, q));
      hi = std::max(hi, sendDispl(a, q) + sendCount(a, q));
    }
    if (lo < hi) {
      char* scratch = inPlaceScratch(c.in + lo * e, (hi - lo) * e);
      copyBytes(scratch, c.in + lo * e, (hi - lo) * e);
      src = scratch;
      srcBase = lo;
    }
  }
  auto blockFor = [&](int q) { return src + (sendDispl(a, q) - srcBase) * e; };

  c.acquireSlot(g0);
  char* slot = c.stage(me, g0);
  auto* header = reinterpret_cast<ExchangeHeader*>(slot);
  auto* table = reinterpret_cast<ExchangeEntry*>(slot + sizeof(ExchangeHeader));
  header->argsKey = argsKey(a);
  header->nranks = static_cast<uint32_t>(n);
  // In place, an inline rank's output is its input, which it has not copied aside: a peer's write could overtake
  // the copy of its own block.
  const bool takesWrites = !(inlineMine && (c.in == c.out || a.inPlace));
  // Registered input between processes: peers map it and read their blocks with a plain copy (not when the blocks
  // come from scratch, or inline, or when ranks share an address space anyway).
  const bool inputMapped = !inlineMine && src == c.in && !stagedInPlace && inputMappable();
  header->input = inputMapped ? inputRef : BufferRef{};
  header->flags = (inlineMine ? kInline : 0) | (readsAll ? kReadsAll : 0) | (sameProcess ? kSameProcess : 0) |
                  (takesWrites ? kTakesWrites : 0) | (inputMapped ? kInputMapped : 0);
  header->cmaOffers = forms.offersByBand ? forms.cmaOffers : (forms.allowCma ? ~uint64_t{0} : 0);
  char* packed = slot + tableBytes(n);
  for (int q = 0; q < n; ++q) {
    const size_t bytes = sendCount(a, q) * e;
    table[q] = ExchangeEntry{bytes, recvCount(a, q) * e, reinterpret_cast<uint64_t>(blockFor(q)),
                             reinterpret_cast<uint64_t>(c.out + recvDispl(a, q) * e)};
    if (inlineMine && q != me && bytes > 0) {
      copyBytes(packed, blockFor(q), bytes);
      packed += bytes;
    }
  }
  // Peers read this rank's blocks from its buffer (or scratch) in place or by CMA, unless they are inline here, and
  // may write into its output when it takes writes, until they post `done` for g0: on an error it must wait for that.
  c.enter(&RankControl::in, g0 + 1, g0 + 1, !inlineMine || takesWrites);
  c.post(&RankControl::in, g0 + 1);
  c.waitAllPeers(&RankControl::in, g0 + 1, "alltoall table");
  // The peers' tables (and, for small calls, their inline blocks) were just written on other cores: ask for all
  // their lines at once, so that the checks and copies below do not take the misses one after another. A peer's
  // inline bytes are guessed from this rank's own (alike for alltoall; a guess for alltoallv, harmless if wrong).
  const size_t expectLines = (tableBytes(n) + (inlineMine ? peerBytes : 0) + kLine - 1) / kLine;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    const char* peerSlot = c.stage(p, g0);
    for (size_t l = 0; l < expectLines; ++l) __builtin_prefetch(peerSlot + l * kLine);
  }

  // Every rank checks every pair and decides from the same tables, so all of them fail or proceed alike.
  bool allInline = true, allRead = true, allSameProcess = true, allMappedIn = true;
  std::vector<char>& inlined = c.inlineFrom;  // kept: peers may reuse their slot g0 once every rank posted done g0 + 1
  inlined.assign(n, 0);
  size_t stagedMax = 0;   // largest block that no receiver finds inline
  size_t totalBytes = 0;  // every rank's input
  for (int p = 0; p < n; ++p) {
    const ExchangeHeader& h = headerOf(c, p, g0);
    if (h.argsKey != header->argsKey || h.nranks != header->nranks) {
      throwError(ternInvalidUsage,
                 "rank %d: %s arguments differ from rank %d's (datatype and count must agree on every rank)", me,
                 c.what, p);
    }
    inlined[p] = (h.flags & kInline) != 0 ? 1 : 0;
    allInline = allInline && inlined[p] != 0;
    allRead = allRead && (h.flags & kReadsAll) != 0;
    allSameProcess = allSameProcess && (h.flags & kSameProcess) != 0;
    // A rank whose blocks came inline needs no mapping: its peers copy them out of its slot.
    allMappedIn = allMappedIn && (h.flags & (kInputMapped | kInline)) != 0;
    const ExchangeEntry* t = tableOf(c, p, g0);
    for (int q = 0; q < n; ++q) {
      const uint64_t expected = tableOf(c, q, g0)[p].recvBytes;
      if (t[q].sendBytes != expected) {
        throwError(ternInvalidUsage, "rank %d: %s: rank %d sends %llu bytes to rank %d, which expects %llu", me, c.what,
                   p, static_cast<unsigned long long>(t[q].sendBytes), q, static_cast<unsigned long long>(expected));
      }
      if ((h.flags & kInline) == 0 && q != p) stagedMax = std::max<size_t>(stagedMax, t[q].sendBytes);
      totalBytes += t[q].sendBytes;
    }
  }
  // The CMA form runs where every rank offers it, for the band of the call's mean input per rank (alike everywhere).
  const size_t meanInputBytes = totalBytes / static_cast<size_t>(n);
  if (forms.meanInputBytes != nullptr) *forms.meanInputBytes = meanInputBytes;
  bool cmaAgreed = true;
  for (int p = 0; p < n; ++p)
    cmaAgreed = cmaAgreed && CmaLearner::offered(headerOf(c, p, g0).cmaOffers, meanInputBytes);
  if (forced == ShmAlgorithm::kSmall && !allInline) {
    cannotRun(c, forced, "every rank's blocks for its peers must fit one staging slot");
  }
  // Every input mapped (processes, registered buffers): one plain copy per block, preferred to CMA's kernel copy.
  const bool mappedIn = allMappedIn && !allSameProcess && forced != ShmAlgorithm::kCma;
  const bool onePassForm = allSameProcess ? forms.allowMapped : (mappedIn || cmaAgreed);
  bool onePass = !allInline && (allRead || mappedIn) && onePassForm && forced != ShmAlgorithm::kPipelined;
  if (stagedInPlace && (onePass || std::find(inlined.begin(), inlined.end(), 1) != inlined.end())) {
    // Peers would read this rank's buffer while it is overwritten, or an inline block would land on one not staged.
    throwError(ternInternalError, "rank %d: %s in place without scratch chose a form that needs it", me, c.what);
  }
  if (forced == ShmAlgorithm::kCma && (!onePass || allSameProcess)) {
    cannotRun(c, forced, "it needs every rank in its own process, allowed to read its peers by CMA (ptrace scope)");
  }
  if (forced == ShmAlgorithm::kMapped && (!onePass || !(allSameProcess || mappedIn))) {
    cannotRun(c, forced,
              "every rank must address every rank's input (ranks that are threads of one process, or inputs "
              "allocated with ternMemAlloc)");
  }
  // After the checks every rank makes alike (so that each reports the same error), before touching any peer's buffers.
  c.refuseIfAPeerLeft();
  const size_t piece = std::max<size_t>(kLine, kStageSlotBytes / static_cast<size_t>(n) / kLine * kLine);
  const uint32_t rounds = allInline || onePass ? 0 : static_cast<uint32_t>((stagedMax + piece - 1) / piece);

  // One pass: which leading part of every block its sender writes into the receiver (the rest the receiver reads),
  // planned alike on every rank from the tables. Blocks that came inline are the receiver's to copy, and so are the
  // blocks for a rank that takes no writes.
  std::vector<uint64_t> pushed;  // n x n; only the one-pass form reads it (pushedOf)
  if (onePass) {
    const auto un = static_cast<size_t>(n);
    std::vector<uint64_t> movable(un * un, 0), fixed(un, 0);
    for (size_t p = 0; p < un; ++p) {
      const ExchangeEntry* t = tableOf(c, static_cast<int>(p), g0);
      for (size_t q = 0; q < un; ++q) {
        // Mapped inputs: receivers read everything (outputs are not mapped, and a write by CMA is a kernel copy).
        if ((inlined[p] != 0 || mappedIn || (headerOf(c, static_cast<int>(q), g0).flags & kTakesWrites) == 0) &&
            p != q) {
          fixed[q] += t[q].sendBytes;
        } else {
          movable[p * un + q] = t[q].sendBytes;
        }
      }
    }
    pushed = planAlltoAllCopies(n, movable, fixed, kAlltoAllMinBalanceShift, kAlltoAllBalanceAlign).pushed;
  }
  auto pushedOf = [&](int p, int q) { return pushed[static_cast<size_t>(p) * static_cast<size_t>(n) + q]; };

  // Own block, then every peer's: inline from its slot, or read in place / by CMA (what its sender does not write).
  // An output larger than the caches is written with streaming stores where this rank copies it in full (its own
  // block, the staged rounds): ordinary stores would read every line of it from memory first.
  const bool streamOut = shmOutputBytes(a, n) >= streamingOutputBytes();
  const size_t ownBytes = sendCount(a, me) * e;
  char* ownDst = c.out + recvDispl(a, me) * e;
  if (ownBytes > 0 && ownDst != blockFor(me)) {
    const bool apart = ownDst + ownBytes <= blockFor(me) || blockFor(me) + ownBytes <= ownDst;
    if (streamOut && apart) {
      streamCopy(ownDst, blockFor(me), ownBytes);
    } else {
      std::memmove(ownDst, blockFor(me), ownBytes);
    }
  }
  for (int i = 1; i < n; ++i) {
    const int p = (me + i) % n;
    const ExchangeEntry* t = tableOf(c, p, g0);
    const size_t bytes = t[me].sendBytes;
    char* dst = c.out + recvDispl(a, p) * e;
    if (inlined[p] != 0) {
      size_t offset = tableBytes(n);
      for (int q = 0; q < me; ++q) {
        if (q != p) offset += t[q].sendBytes;
      }
      if (bytes > 0) copyBytes(dst, c.stage(p, g0) + offset, bytes);
    } else if (onePass && bytes > 0) {
      const size_t from = pushedOf(p, me);
      if (from < bytes) {
        if (c.mesh->peer(p).sameProcess) {
          copyBytes(dst + from, reinterpret_cast<const char*>(t[me].addr) + from, bytes - from);
        } else if (mappedIn) {
          copyBytes(dst + from,
                    mappedBlock(c, *forms.registered, p, headerOf(c, p, g0).input, t[me].addr, bytes) + from,
                    bytes - from);
        } else {
          c.cmaReadPeer(p, dst + from, t[me].addr + from, bytes - from, "alltoall input");
        }
      }
    }
  }
  if (onePass) {
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      const size_t part = pushedOf(me, q);
      if (part == 0) continue;
      const uint64_t to = tableOf(c, q, g0)[me].recvAddr;
      if (c.mesh->peer(q).sameProcess) {
        copyBytes(reinterpret_cast<char*>(to), blockFor(q), part);
      } else {
        c.cmaWritePeer(q, to, blockFor(q), part, "alltoall output");
      }
      gPushes.fetch_add(1, std::memory_order_relaxed);
    }
  }
  c.post(&RankControl::done, g0 + 1);

  // Blocks that go through the staging slots: round k carries bytes [k * piece, (k + 1) * piece) of every block.
  const bool stageMine = !inlineMine;
  for (uint32_t k = 0; k < rounds; ++k) {
    const uint32_t g = g0 + 1 + k;
    const size_t begin = static_cast<size_t>(k) * piece;
    if (stageMine) {
      c.acquireSlot(g);
      char* region = c.stage(me, g);
      for (int q = 0; q < n; ++q) {
        const size_t bytes = sendCount(a, q) * e;
        if (q != me && begin < bytes) {
          copyBytes(region + static_cast<size_t>(q) * piece, blockFor(q) + begin, std::min(piece, bytes - begin));
        }
      }
    }
    c.post(&RankControl::in, g + 1);
    for (int i = 1; i < n; ++i) {
      const int p = (me + i) % n;
      if (inlined[p] != 0) continue;
      const size_t bytes = recvCount(a, p) * e;  // checked equal to what p sends
      if (begin >= bytes) continue;
      c.wait(p, &RankControl::in, g + 1, "alltoall staged block");
      copyOut(c.out + recvDispl(a, p) * e + begin, c.stage(p, g) + static_cast<size_t>(me) * piece,
              std::min(piece, bytes - begin), streamOut);
    }
    c.post(&RankControl::done, g + 1);
  }
  chunkSeq = g0 + 1 + rounds;
  c.chunkBase = g0;
  c.chunks = 1 + rounds;

  if (onePass) {
    // Peers read this rank's buffer (or scratch), and may write its output, until they post `done`.
    c.waitAllPeers(&RankControl::done, g0 + 1, "end of the alltoall");
    return allSameProcess || mappedIn ? ShmAlgorithm::kMapped : ShmAlgorithm::kCma;
  }
  return allInline ? ShmAlgorithm::kSmall : ShmAlgorithm::kPipelined;
}

}  // namespace tern::shm
