#include "algorithms/shm/direct_collectives.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/shm/shm_wire.hpp"
#include "transport/shm/stream_copy.hpp"

namespace tern::shm {

namespace {

std::atomic<ZeroCopyMode> gZeroCopyMode{ZeroCopyMode::kAuto};
std::atomic<bool> gCountRuns{false};
std::atomic<uint64_t> gRuns[5];

void noteRun(ShmAlgorithm a) {
  if (gCountRuns.load(std::memory_order_relaxed)) gRuns[static_cast<int>(a)].fetch_add(1, std::memory_order_relaxed);
}

// Bytes of the input and output buffers of a rank.
size_t inputBytes(const CollArgs& a, int n, size_t) { return shmInputBytes(a, n); }
size_t outputBytes(const CollArgs& a, int n, size_t) { return shmOutputBytes(a, n); }

bool hasCmaForm(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kAllGather || c == Collective::kBroadcast ||
         c == Collective::kReduce || c == Collective::kReduceScatter;
}

}  // namespace

ShmPlan forcedShmPlan(ShmAlgorithm algo) {
  ShmPlan p;
  p.algo = algo;
  p.forced = true;
  p.allowCma = algo == ShmAlgorithm::kCma;
  p.allowMapped = algo == ShmAlgorithm::kMapped;
  return p;
}

void setZeroCopyModeForTesting(ZeroCopyMode mode) { gZeroCopyMode.store(mode); }

void countRunsForTesting(bool on) { gCountRuns.store(on); }

uint64_t runsForTesting(ShmAlgorithm algo) { return gRuns[static_cast<int>(algo)].load(); }

DirectCollectives::DirectCollectives(Mesh* mesh, Watchdog* dog, const SpinPolicy& spin)
    : mesh_(mesh),
      dog_(dog),
      spin_(spin),
      tmp_(new char[kStageSlotBytes]),
      cmaBuf_(new char[kCmaBufferBytes]),
      mappings_(static_cast<size_t>(std::max(64, 4 * mesh->nranks()))),
      hugePages_(HugePageAdvisor::enabledByEnvironment()),
      cmaLearner_(envFlag("SHM_CMA_LEARN", true), mesh->kernelCopiesSlow(), mesh->ranksOwnCpus(),
                  mesh->cacheSharing() == CacheSharing::kShared) {}

size_t DirectCollectives::chunkBytes(size_t bytes) const {
  // At least 8 chunks, so that staging, reduction and gather overlap across ranks even for mid-size messages, in
  // chunks of 32..128 KiB: smaller ones pay the per-chunk synchronisation (~1 us), larger ones measured slower at every
  // size from 8 MiB to 128 MiB (2 ranks: 64-128 KiB ~2.2-2.4 GB/s, 512 KiB ~1.4 GB/s at 8 MiB).
  static const size_t forced = static_cast<size_t>(envInt("SHM_CHUNK_BYTES", 0));  // 0: by size
  if (forced > 0) return forced;
  size_t chunk = size_t{32} << 10;
  while (chunk < (size_t{128} << 10) && chunk * 8 < bytes) chunk *= 2;
  return chunk;
}

namespace {

// Ordinary buffers at least this large (input bytes per rank) read peers by CMA instead of staging: the catalogue's
// minimum per collective (shmCmaMinBytes), or TERN_SHM_CMA_MIN_BYTES for all of them (0 turns it off). Below it the
// system calls cost more than the copy they save.
size_t cmaMinBytes(Collective c, int nranks) {
  static const long knob = envInt("SHM_CMA_MIN_BYTES", -1);  // -1: unset (the knob's range starts at 0)
  if (knob < 0) return shmCmaMinBytes(c, nranks);
  return knob == 0 ? SIZE_MAX : static_cast<size_t>(knob);
}

// Chunk of the CMA allreduce, bytes of one rank's buffer (TERN_SHM_CMA_CHUNK_BYTES; default: the whole call).
// Measured: one chunk beats 1-4 MiB chunks at 4-16 MiB (7.6 vs 5.2-7.7 GB/s), the per-chunk waits cost more than
// the cache locality they buy.
size_t cmaChunkBytes() {
  static const size_t bytes = [] {
    const long x = envInt("SHM_CMA_CHUNK_BYTES", 0);
    return x == 0 ? kCmaMaxBytes : static_cast<size_t>(x);
  }();
  return bytes;
}

}  // namespace

bool DirectCollectives::cmaSizeAdmits(const CollArgs& a, const ShmPlan& plan) const {
  const int n = mesh_->nranks();
  if (isAlltoAll(a.coll)) {
    return plan.allowCma && plan.algo != ShmAlgorithm::kSmall && n > 1 &&
           alltoallPeerBytes(a, 0, n) > shmAlltoAllInlineLimit(a, n);
  }
  const size_t inBytes = shmInputBytes(a, n);
  const bool sized = plan.algo == ShmAlgorithm::kCma || inBytes >= cmaMinBytes(a.coll, n);
  return plan.allowCma && hasCmaForm(a.coll) && n > 1 && sized && inBytes <= kCmaMaxBytes;
}

CmaKey DirectCollectives::learnerKey(const CollArgs& a) const {
  // In place or not is each rank's own (NCCL lets one rank pass the same buffer and another two), so it keeps bands
  // apart only where the learner's state steers nothing every rank must choose alike: at the one-phase sizes, where
  // CMA may replace that form, whether a call takes the path where offers are exchanged at all comes from that state
  // (cmaReplacesOnePhase). All-to-all decides its forms in its own exchange.
  const bool onePhaseSize = !isAlltoAll(a.coll) && defaultShmAlgorithm(a, mesh_->nranks()) == ShmAlgorithm::kSmall;
  return {a.coll, a.inPlace && !onePhaseSize};
}

bool DirectCollectives::cmaAvoided(const CollArgs& a) const {
  return cmaLearner_.verdict(learnerKey(a), shmInputBytes(a, mesh_->nranks())) == CmaLearner::Verdict::kAvoid;
}

ShmAlgorithm DirectCollectives::expectedAlgorithm(const CollArgs& a, const ShmPlan& plan) const {
  if (plan.algo != ShmAlgorithm::kPipelined || plan.forced) return plan.algo;
  if (isAlltoAll(a.coll)) {  // as directAlltoAll decides for blocks that do not fit inline
    bool threads = plan.allowMapped && gZeroCopyMode.load(std::memory_order_relaxed) == ZeroCopyMode::kAuto;
    bool reads = plan.allowCma && !cmaAvoided(a), processes = false;
    for (int q : mesh_->localPeers()) {
      threads = threads && mesh_->peer(q).sameProcess;
      reads = reads && (mesh_->peer(q).sameProcess || mesh_->peer(q).cmaFrom);
      processes = processes || !mesh_->peer(q).sameProcess;
    }
    if (threads) return ShmAlgorithm::kMapped;
    if (reads && processes) return ShmAlgorithm::kCma;
    // Out of place, blocks past the inline limit that still fit a slot go inline where no one-pass form runs and the
    // ranks own their CPUs (directAlltoAll; for alltoallv as this rank's own sizes say).
    const int n = mesh_->nranks();
    return processes && mesh_->ranksOwnCpus() && alltoallPeerBytes(a, mesh_->rank(), n) <= alltoallInlineCapacity(n)
               ? ShmAlgorithm::kSmall
               : ShmAlgorithm::kPipelined;
  }
  const int n = mesh_->nranks();
  const size_t inBytes = shmInputBytes(a, n);
  // As describeCall decides for ordinary buffers: CMA between processes, in place between threads.
  bool cma = plan.allowCma && hasCmaForm(a.coll) && n > 1 && inBytes >= cmaMinBytes(a.coll, n) &&
             inBytes <= kCmaMaxBytes && !cmaAvoided(a);
  bool threads = gZeroCopyMode.load(std::memory_order_relaxed) == ZeroCopyMode::kAuto && a.count > 0;
  for (int q : mesh_->localPeers()) {
    cma = cma && mesh_->peer(q).cmaFrom && !mesh_->peer(q).sameProcess;
    threads = threads && mesh_->peer(q).sameProcess;
  }
  if (cma) return ShmAlgorithm::kCma;
  if (threads && plan.allowMapped && a.coll == Collective::kAllReduce) return ShmAlgorithm::kMapped;
  return ShmAlgorithm::kPipelined;
}

bool DirectCollectives::cmaCouldReplaceOnePhase(const CollArgs& a) const {
  const int n = mesh_->nranks();
  if (!hasCmaForm(a.coll) || n < 2 || !mesh_->cmaBetweenAllRanks()) return false;
  const size_t inBytes = shmInputBytes(a, n);
  return inBytes >= cmaMinBytes(a.coll, n) && inBytes <= kCmaMaxBytes;
}

bool DirectCollectives::cmaReplacesOnePhase(const CollArgs& a) const {
  // What the learner may offer, not its verdict: its trials and checks reach the one-phase sizes too (the calls it
  // declines run one-phase and are timed as the other form, runCall). A call on which the ranks vote takes the path
  // where the offers meet (describeCall), since each rank's vote is its own.
  return cmaCouldReplaceOnePhase(a) && cmaLearner_.anyRankMayOffer(learnerKey(a), shmInputBytes(a, mesh_->nranks()));
}

bool DirectCollectives::zeroCopyFor(const void* p, size_t bytes, BufferRef* ref) const {
  describeBuffer(p, bytes, ref);
  ZeroCopyMode mode = gZeroCopyMode.load(std::memory_order_relaxed);
  if (p == nullptr || bytes == 0 || mode == ZeroCopyMode::kStagedOnly) return false;
  for (int q : mesh_->localPeers()) {
    const PeerView& v = mesh_->peer(q);
    bool direct = (v.sameProcess && mode == ZeroCopyMode::kAuto) || (ref->segId != 0 && v.fdTo);
    if (!direct) return false;
  }
  ref->mode = BufferMode::kDirect;
  return true;
}

const char* DirectCollectives::resolve(int peer, const BufferRef& ref, size_t bytes) {
  const PeerView& v = mesh_->peer(peer);
  if (ref.segId == 0 || (v.sameProcess && gZeroCopyMode.load(std::memory_order_relaxed) == ZeroCopyMode::kAuto)) {
    return reinterpret_cast<const char*>(ref.addr);
  }
  const char* p = mappings_.resolve(v.pid, v.token, ref, bytes);
  if (p == nullptr) {
    throwError(ternSystemError, "rank %d: cannot map rank %d's registered buffer (/proc/%d/fd/%d): %s", mesh_->rank(),
               peer, static_cast<int>(v.pid), ref.fd, std::strerror(errno));
  }
  return p;
}

// Posts this rank's descriptor for the call, waits for every peer's, checks that the arguments agree and finds
// every rank's buffers that are read in place.
void DirectCollectives::describeCall(DirectCall& c, Operation& op, const ShmPlan& plan) {
  const CollArgs& a = op.args;
  const int n = c.n, me = c.rank;
  const size_t inBytes = inputBytes(a, n, c.esize), outBytes = outputBytes(a, n, c.esize);
  const uint32_t k = ++callSeq_;
  CallDesc& d = mesh_->ctrl(me).desc[k & 1];
  d.call = k;
  d.coll = static_cast<uint32_t>(a.coll);
  d.dtype = static_cast<uint32_t>(a.dtype);
  d.op = static_cast<uint32_t>(a.op);
  d.root = a.root;
  d.count = a.count;
  bool sendsInput = a.coll != Collective::kBroadcast || me == a.root;
  c.inStaged = !(sendsInput && zeroCopyFor(op.input, inBytes, &d.in));
  if (c.inStaged) d.in.mode = BufferMode::kStaged;
  c.outStaged = !(a.coll == Collective::kAllReduce && zeroCopyFor(op.output, outBytes, &d.out));
  if (c.outStaged) {
    // Only the output's address: the CMA allreduce and broadcast write peers' outputs (cma_*.cpp).
    d.out = BufferRef{};
    d.out.addr = reinterpret_cast<uint64_t>(op.output);
    d.out.mode = BufferMode::kStaged;
  }
  // CMA is used only when every rank offers it (d.pad): all ranks must run the same algorithm and chunking.
  // Allreduce, reduce, reduce-scatter, allgather and broadcast have a CMA form (cma_*.cpp) for ordinary buffers.
  // A forced shm_cma is offered at any size up to its limit (the minimum is where it starts to pay).
  // Whether CMA is offered depends on this rank's buffers; whether the call is one the learner counts, on the
  // arguments alone (every rank counts the same calls).
  const bool cmaSize = cmaSizeAdmits(a, plan);
  bool cmaOffer = cmaSize && c.inStaged && c.outStaged;
  learnsCma_ = cmaSize && !plan.forced && CmaLearner::learns(a.coll);
  learnBytes_ = inBytes;
  if (learnsCma_) learnStart_ = std::chrono::steady_clock::now();
  if (learnsCma_) cmaOffer = cmaLearner_.offer(learnerKey(a), inBytes) && cmaOffer;
  for (int q : mesh_->localPeers()) cmaOffer = cmaOffer && mesh_->peer(q).cmaFrom && !mesh_->peer(q).sameProcess;
  d.pad = cmaOffer ? 1 : 0;
  if (cmaOffer) {
    // The buffers peers will pin: the input they read (not a broadcast's non-root input, which is not read) and an
    // allreduce's output they write. Before posting the descriptor: no peer touches them until it has seen it.
    if (sendsInput) hugePages_.onBuffer(op.input, inBytes);
    if (a.coll == Collective::kAllReduce && op.output != op.input) hugePages_.onBuffer(op.output, outBytes);
  }
  // Peers read (and the one-pass allreduces write) a rank's buffers between seeing its descriptor and posting `done`
  // for the call's last chunk. CMA rechunking happens once every descriptor is seen (run()), on every rank alike.
  c.enter(&RankControl::call, k, c.chunkBase + c.chunks, !c.inStaged || !c.outStaged || cmaOffer);
  c.post(&RankControl::call, k);
  c.waitAllPeers(&RankControl::call, k, "call descriptor");

  c.peerIn.assign(n, nullptr);
  c.peerOut.assign(n, nullptr);
  c.cma = true;
  c.allMapped = true;
  c.peerInAddr.assign(n, 0);
  c.peerOutAddr.assign(n, 0);
  for (int p = 0; p < n; ++p) {
    const CallDesc& pd = mesh_->ctrl(p).desc[k & 1];
    c.cma = c.cma && pd.pad == 1;
    c.peerInAddr[p] = pd.in.addr;
    c.peerOutAddr[p] = pd.out.addr;
    if (pd.call != k || pd.coll != d.coll || pd.dtype != d.dtype || pd.op != d.op || pd.root != d.root ||
        pd.count != d.count) {
      throwError(ternInvalidUsage,
                 "rank %d: %s arguments differ from rank %d's (count %zu vs %llu; count, datatype, "
                 "op and root must agree on every rank)",
                 me, c.what, p, a.count, static_cast<unsigned long long>(pd.count));
    }
    if (p != me) {
      // The peer's descriptor is its own to write: a mode or range no correct peer posts is an error, not a map.
      wire::checkBufferRef(pd.in, inBytes, me, p);
      wire::checkBufferRef(pd.out, outBytes, me, p);
      if (pd.pad > 1) throwError(ternInternalError, "rank %d: corrupted call descriptor from rank %d", me, p);
    }
    if (pd.in.mode == BufferMode::kDirect) c.peerIn[p] = p == me ? c.in : resolve(p, pd.in, inBytes);
    // Peers' outputs are written only by the one-pass allreduce, through read-write mappings.
    if (pd.out.mode == BufferMode::kDirect)
      c.peerOut[p] = p == me ? c.out : const_cast<char*>(resolve(p, pd.out, outBytes));
    c.allMapped = c.allMapped && pd.in.mode == BufferMode::kDirect && pd.out.mode == BufferMode::kDirect;
  }
}

ShmAlgorithm DirectCollectives::run(Operation& op, const ExecContext& ctx, const ShmPlan& plan) {
  DirectCall& c = call_;  // reused: its vectors keep their capacity, so a call allocates nothing
  c.entered = c.exposed = false;
  ran_ = plan.algo;
  learnsCma_ = false;
  try {
    runCall(op, ctx, plan);
  } catch (...) {
    // A rank must not hand its buffers back to its caller while a peer may still read or write them.
    if (c.entered) c.leaveAfterError();
    throw;
  }
  if (learnsCma_) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - learnStart_;
    const std::string decided =
        cmaLearner_.record(learnerKey(op.args), learnBytes_, ran_ == ShmAlgorithm::kCma, took.count());
    if (!decided.empty()) TERN_LOG(kInfo, kShm, mesh_->rank(), "%s", decided.c_str());
  }
  return ran_;
}

void DirectCollectives::runCall(Operation& op, const ExecContext& ctx, const ShmPlan& plan) {
  const CollArgs& a = op.args;
  DirectCall& c = call_;
  c.mesh = mesh_;
  c.rank = mesh_->rank();
  c.n = mesh_->nranks();
  c.args = &a;
  c.what = ctx.what;
  c.esize = dataTypeSize(a.dtype);
  c.avgDivisor = ctx.nranks;
  c.in = static_cast<const char*>(op.input);
  c.out = static_cast<char*>(op.output);
  c.scope = WaitScope{dog_, &spin_, ctx.deadline, ctx.abortFlag};
  c.tmp = tmp_.get();
  c.inStaged = c.outStaged = true;
  c.streamOut = false;
  c.myCpu = currentCpu();
  if (dog_->aborted()) dog_->checkAbortAndDeadline(c.rank, ctx.deadline, ctx.abortFlag, [] { return "shm"; });

  const bool forcedSmall = plan.forced && plan.algo == ShmAlgorithm::kSmall;
  if (isAlltoAll(a.coll) && (!plan.forced || forcedSmall) && shmAlltoAllOnePhase(a, c.n, forcedSmall)) {
    noteRun(ran_ = ShmAlgorithm::kSmall);
    smallCollective(c, ++smallSeq_);
    return;
  }
  if (isAlltoAll(a.coll)) {  // direct_alltoall.cpp: its own table exchange decides the form, alike on every rank
    AlltoAllForms forms;
    forms.forced = plan.forced ? plan.algo : ShmAlgorithm::kNone;
    // Counted by the learner: alltoalls whose blocks do not fit inline, and every alltoallv (its sizes differ from
    // rank to rank; whether a rank's own blocks are inline must not change what every rank counts). On a counted
    // call the learner's offer is the whole verdict, trials included; otherwise what it learned (a forced form
    // overrides both).
    learnsCma_ = !plan.forced && (a.coll == Collective::kAlltoAll ? cmaSizeAdmits(a, plan) : plan.allowCma && c.n > 1);
    if (learnsCma_) learnStart_ = std::chrono::steady_clock::now();
    if (learnsCma_ && a.coll == Collective::kAlltoAllv) {
      // Its band is the mean input over the ranks, which the tables give: offers for every band it may fall in.
      // The mean is at least this rank's input or output over n; more than n times it is left to staging.
      size_t sent = 0, received = 0;
      for (const size_t x : a.sendCounts) sent += x;
      for (const size_t x : a.recvCounts) received += x;
      const size_t mine = std::max(sent, received) * c.esize;
      const auto un = static_cast<size_t>(c.n);
      forms.offersByBand = true;
      forms.cmaOffers = cmaLearner_.offers(learnerKey(a), mine / un, mine > SIZE_MAX / un ? SIZE_MAX : mine * un);
      forms.meanInputBytes = &learnBytes_;
    } else if (learnsCma_) {
      learnBytes_ = shmInputBytes(a, c.n);
      forms.allowCma = plan.allowCma && cmaLearner_.offer(learnerKey(a), learnBytes_);
    } else {
      forms.allowCma = plan.allowCma && (plan.forced || !cmaAvoided(a));
    }
    forms.allowMapped = plan.allowMapped && gZeroCopyMode.load(std::memory_order_relaxed) == ZeroCopyMode::kAuto;
    forms.registered = plan.allowMapped ? this : nullptr;
    forms.inlinePastLimit = mesh_->ranksOwnCpus();
    noteRun(ran_ = directAlltoAll(c, forms, chunkSeq_));
    return;
  }
  if (plan.algo == ShmAlgorithm::kSmall) {
    // A one-phase call that the CMA form could have taken (cmaReplacesOnePhase: the learner declined it this time)
    // is the learner's other form: counted and timed, or the band would never reach its next check.
    learnsCma_ = plan.allowCma && !plan.forced && CmaLearner::learns(a.coll) && cmaCouldReplaceOnePhase(a);
    if (learnsCma_) {
      learnBytes_ = shmInputBytes(a, c.n);
      learnStart_ = std::chrono::steady_clock::now();
    }
    noteRun(ran_ = ShmAlgorithm::kSmall);
    smallCollective(c, ++smallSeq_);
    return;
  }
  if (a.count == 0) return;
  // Chunks in elements of one rank's buffer; reduce-scatter stages n blocks' worth of a chunk per slot.
  size_t perSlot = a.coll == Collective::kReduceScatter ? kStageSlotBytes / static_cast<size_t>(c.n) : kStageSlotBytes;
  size_t chunk = std::min(chunkBytes(inputBytes(a, c.n, c.esize)), perSlot);
  c.chunkElems = std::max<size_t>(1, chunk / c.esize / kLine * kLine);
  c.chunks = static_cast<uint32_t>((a.count + c.chunkElems - 1) / c.chunkElems);
  c.chunkBase = chunkSeq_;
  c.streamOut = outputBytes(a, c.n, c.esize) >= streamingOutputBytes();
  c.cmaBuf = cmaBuf_.get();
  c.cmaBytes = kCmaBufferBytes;
  describeCall(c, op, plan);
  // Every rank saw every rank's descriptor, so a forced form that cannot run fails alike on every rank.
  if (plan.algo == ShmAlgorithm::kCma && !c.cma) {
    throwError(ternInvalidUsage,
               "rank %d: TERN_ALGO=shm_cma cannot run this %s: it needs every rank in its own process, allowed to "
               "read its peers by CMA (ptrace scope), with ordinary (not ternMemAlloc) buffers of at most %zu bytes",
               c.rank, c.what, kCmaMaxBytes);
  }
  if (plan.algo == ShmAlgorithm::kMapped && !c.allMapped) {
    throwError(ternInvalidUsage,
               "rank %d: TERN_ALGO=shm_mapped cannot run this %s: every rank's input and output must be addressable "
               "by every rank (ranks that are threads of one process, or ternMemAlloc buffers peers may map)",
               c.rank, c.what);
  }
  // After the checks every rank makes alike (so that each reports the same error), before touching any peer's buffers.
  c.refuseIfAPeerLeft();
  if (c.cma) {  // every rank decided the same (describeCall), so every rank rechunks the same way
    c.chunkElems = std::max<size_t>(kLine, cmaChunkBytes() / c.esize / kLine * kLine);
    c.chunks = static_cast<uint32_t>((a.count + c.chunkElems - 1) / c.chunkElems);
    c.releaseDone = c.chunkBase + c.chunks;
  }
  chunkSeq_ += c.chunks;
  ran_ = c.cma                                                                 ? ShmAlgorithm::kCma
         : a.coll == Collective::kAllReduce && c.allMapped && plan.allowMapped ? ShmAlgorithm::kMapped
                                                                               : ShmAlgorithm::kPipelined;
  noteRun(ran_);
  switch (a.coll) {
    case Collective::kAllReduce:
      if (c.cma) {
        cmaAllReduce(c);
      } else if (c.allMapped && plan.allowMapped) {
        mappedAllReduce(c);
      } else {
        pipelinedAllReduce(c);
      }
      break;
    case Collective::kReduceScatter:
      if (c.cma) {
        cmaReduceScatter(c);
      } else {
        pipelinedReduceScatter(c);
      }
      break;
    case Collective::kAllGather:
      if (c.cma) {
        cmaAllGather(c);
      } else {
        pipelinedAllGather(c);
      }
      break;
    case Collective::kBroadcast:
      if (c.cma) {
        cmaBroadcast(c);
      } else {
        pipelinedBroadcast(c);
      }
      break;
    case Collective::kReduce:
      if (c.cma) {
        cmaReduce(c);
      } else {
        pipelinedReduce(c);
      }
      break;
    default:
      throwError(ternInternalError, "rank %d: no direct algorithm for %s", c.rank, c.what);
  }
}

}  // namespace tern::shm
