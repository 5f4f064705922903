// Whether the one-pass CMA forms pay on this host, learned from the first calls that could take them.
//
// Why: a CMA form replaces the staged copies with kernel copies (process_vm_readv/writev), which pin the peer's
// pages one by one. How that compares with a user-space copy is a property of the host (kernel, hypervisor, page
// size), not of the arguments: one VM's kernel copies ran the 2-rank allreduce 1.2x faster than staging, another's
// 2-4x slower at every size. No constant is right for both, so each communicator measures.
//
// How: where some rank of the host measured its kernel copies well under memcpy's rate at setup
// (Mesh::kernelCopiesSlow), the setup probe's verdict holds for small bands, and is least reliable for the calls of
// at least largeCmaMinBytes(coll) per rank. There a kernel copy's fixed cost (a system call, pinning pages) is small
// against the copy itself, and the probe compares copies within one core's cache, where memcpy is at its best, while
// the staged forms' second copy (or a reduction's second pass) reads lines another core wrote: on a VM whose vCPUs
// share no cache the CMA forms win those calls several times over despite the probe, allreduce and reduce-scatter as
// much as the collectives that only move data, and where the vCPUs share one staging wins some sizes by up to about
// 1.5x (2x for a reduce-scatter of several MiB) and loses others. So, on that prior:
//   - those bands start on CMA where the host's ranks own their CPUs (a wrong start costs less than the other one):
//     a short run gets the gain without a trial in its timed calls, and a host where staging pays after all finds
//     out at the band's first check (kConfirmCall); but an all-to-all's in place starts avoided (its CMA form first
//     copies every block it sends into private scratch, and its peers then read lines another core has just
//     written: its staged form measured 1.6-2.3x faster from 512 KiB to 32 MiB where the vCPUs share no cache);
//   - where the ranks outnumber the CPUs, they share cores, and with them the cache the staged copies go through
//     (staging mostly wins): those bands start avoided, and those of the collectives that only move data
//     (allgather, broadcast, alltoall(v)) from kEarlyCheckMinBytes have their first check early (kEarlyCheckCall),
//     so that a short run still gets CMA where it pays;
//   - every other band starts avoided until kConfirmCall: in small bands the fixed cost decides, and a short run pays
//     no trial there;
//   - where the ranks own their CPUs and share a last-level cache (Mesh::cacheSharing, measured at setup), staging's
//     second copy reads lines the first left in that cache, and once the calls are large the kernel copy's page
//     pinning costs more than that copy: allreduce's and reduce-scatter's bands of at least
//     kSharedCacheStagedReductionMinBytes (their staged forms also won the 512 KiB band there, in forced short runs,
//     and allreduce's in the band checks of long ones) start avoided, and so does every band of reduce (its staged
//     form measured faster at every size there) and of all-to-all(v) out of place too (its blocks go inline through
//     one slot where they fit, two copies in that cache with one synchronisation, which won the bands from 64 KiB to
//     256 KiB in forced short runs and tied CMA at 512 KiB).
//     Broadcast and allgather (their CMA forms only read, and staging gained less), an allreduce in place from
//     kSharedCacheInPlaceAllReduceCmaMinBytes (its CMA form writes its result into the very lines it has just read,
//     one pass that won those calls back) and the reductions' mid-size bands start on CMA.
//     That is the placement a VM's two idle vCPUs often start in; the checks correct it when they move.
// Bands are kept apart for calls in place and out of place (CmaKey): the two move the same bytes over a footprint
// that differs by half, and which form wins differs with it. The caller says where that may be done
// (DirectCollectives::learnerKey: not at the one-phase sizes, whose path every rank must choose alike).
// A band decided by a check carries to its neighbours within kNeighbourBands; one still on the prior alone does not.
// Otherwise per collective and size band (a power of two of input bytes per rank; for alltoallv, whose sizes differ
// from rank to rank, of the mean over the ranks, which every rank knows only once it has read every rank's table: each
// rank then offers for every band the call may fall in, offers(), and the call takes the band's bit; its calls compare
// by time per MiB, since a band holds calls of different sizes), in three steps, every decision taken alike on every
// rank:
//   - A band with a decided band of the same collective within kNeighbourBands starts from that band's verdict (a
//     sweep of sizes pays the trial once). Otherwise its calls run CMA, CMA, staged, staged, staged, CMA, CMA, and
//     each rank votes for the form whose two counted calls took less time together. Not counted: the first (cold)
//     and the first after each switch of form, which pays for the switch (the waits' spin budget adapts to the form
//     before); the counted calls (1 and 6 against 3 and 4) are mirrored, which cancels a steady drift such as the
//     first calls after a pause running slower on a VM.
//   - A vote is offered on the next eligible call: a CMA form runs only when every rank offers it (describeCall), so
//     that call's outcome, which every rank sees alike, is the agreed verdict.
//   - The verdict is checked again by kCheckCalls calls of the other form: the first ones settle the switch (the
//     first pays for it, as in the trial, and the timing of the next still swings either way as the ranks fall into
//     step), the last one's time against the faster of the two calls before the check is a second vote, which
//     decides the band from the call after (the faster of two, so that one call slowed by an interrupt or a
//     preemption does not switch a band). The first check starts at call kConfirmCall of the band,
//     then at doubling intervals up to every kReconfirmEvery calls, and kRecheckAfterSwitch calls after a check that
//     switched the verdict (a few calls' times decided it: a noisy switch would otherwise hold the wrong form until
//     the next scheduled check, hundreds of calls later). Which form pays can change while a job runs (on
//     a VM, the host may move the two ranks' vCPUs from cores that share a cache, where staging's two copies are
//     cheap, to cores that do not, where every line crosses twice and one kernel copy is several times faster), and
//     a check every kReconfirmEvery calls costs at most kCheckCalls slow calls in that many. A short run never gets
//     that far and pays nothing.
// Every rank counts the same calls (bands and eligibility come from arguments every rank shares, or for alltoallv from
// the tables every rank reads), so no exchange beyond the calls' own is needed. Bands are narrow because the crossover
// can move with size: a kernel copy's fixed cost weighs at 8 KiB, its rate at 8 MiB.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "exec/collective.hpp"

namespace tern::shm {

// What a learner's bands are kept by: the collective, and whether its calls run in place (CollArgs::inPlace).
struct CmaKey {
  Collective coll = Collective::kAllReduce;
  bool inPlace = false;
  // Implicit from a collective alone (out of place), so that a call site without buffers reads as before.
  CmaKey(Collective c, bool place = false) : coll(c), inPlace(place) {}  // NOLINT(google-explicit-constructor)
};

class CmaLearner {
 public:
  enum class Verdict { kUnknown, kUse, kAvoid };
  static constexpr int kNeighbourBands = 4;  // a verdict carries to bands up to 16x larger or smaller
  static constexpr int kConfirmCall = 32;    // the band's first call of a check (a power of two)
  // Where kernel copies measured slow at setup: the smallest band (input bytes per rank) that starts on CMA where the
  // host's ranks own their CPUs; where they do not, the smallest band of allgather, broadcast and alltoall(v) whose
  // first check comes early, and the call that starts it.
  static constexpr size_t kLargeCmaMinBytes = size_t{64} << 10;
  // The same for allreduce, whose CMA form starts a band lower (32 KiB per rank, its smallest CMA size on 2 ranks):
  // there staging lost 1.6x to it where the two vCPUs share no cache, and it lost about 1.1x to the one-phase form
  // where they share one (docs/PERFORMANCE.md, sessions 30 and 31), so a wrong start on CMA costs less again. The
  // collectives that move data keep 64 KiB: an in-place alltoall's CMA form of 32 KiB per rank pays a private copy
  // that made it several times slower than staging where the vCPUs share a cache.
  static constexpr size_t kLargeAllReduceCmaMinBytes = size_t{32} << 10;
  static size_t largeCmaMinBytes(Collective coll);
  // Where the ranks share a cache: allreduce's and reduce-scatter's bands from here start avoided, in place or not;
  // an allreduce's in place from kSharedCacheInPlaceAllReduceCmaMinBytes starts on CMA again (the class comment).
  static constexpr size_t kSharedCacheStagedReductionMinBytes = size_t{512} << 10;
  static constexpr size_t kSharedCacheInPlaceAllReduceCmaMinBytes = size_t{8} << 20;
  static constexpr size_t kEarlyCheckMinBytes = size_t{128} << 10;
  static constexpr int kEarlyCheckCall = 2;
  static constexpr int kReconfirmEvery = 1024;   // the longest interval between two such calls (a power of two)
  static constexpr int kRecheckAfterSwitch = 8;  // calls from a check that switched the verdict to the next check
  static constexpr int kCheckCalls = 3;          // calls of the other form in a check (the last one counted)
  // The quick trial's forms (true: CMA), call by call, and which calls count.
  static constexpr int kQuickTrialCalls = 7;
  static constexpr bool kQuickTrial[kQuickTrialCalls] = {true, true, false, false, false, true, true};
  static constexpr bool kQuickTrialCounts[kQuickTrialCalls] = {false, true, false, true, true, false, true};

  // enabled = false: every eligible call offers CMA and nothing is learned (TERN_SHM_CMA_LEARN=0).
  // startAvoided: kernel copies measured slow on this host (the same value on every rank): a band with no decided
  // neighbour starts from the host's prior (priorVerdict) instead of a trial. largeBandsStartOnCma: with
  // startAvoided, the bands of at least largeCmaMinBytes(coll) start on CMA (the host's ranks own their CPUs).
  // ranksShareCache: with both, the host's ranks share a last-level cache, and the large bands start as the class
  // comment says.
  explicit CmaLearner(bool enabled, bool startAvoided = false, bool largeBandsStartOnCma = false,
                      bool ranksShareCache = false)
      : enabled_(enabled),
        startAvoided_(startAvoided),
        largeBandsStartOnCma_(largeBandsStartOnCma),
        ranksShareCache_(ranksShareCache) {}

  // Whether the learner decides for calls of coll at all: allreduce, allgather, broadcast, reduce, reduce-scatter
  // and alltoall, whose sizes every rank knows alike, and alltoallv by its mean size over the ranks.
  static bool learns(Collective coll);

  // Whether this rank offers the CMA form for an eligible call (one the size rules give to CMA) of coll with inBytes
  // input bytes per rank; record() after every eligible call, in call order.
  bool offer(CmaKey key, size_t inBytes) const;
  // Whether any rank may offer CMA for the call: offer() where it is the same on every rank (a trial's or a check's
  // form, or the verdict), true where each rank offers its own vote. For a choice every rank must make alike, such
  // as whether a call takes the path where the offers are exchanged at all.
  bool anyRankMayOffer(CmaKey key, size_t inBytes) const;
  // offer() for every band from lowBytes' to highBytes' (bit b: the band of 2^b bytes; 0 outside), for a call whose
  // band is known only after the offers are posted (alltoallv). offered(): the bit of inBytes' band.
  uint64_t offers(CmaKey key, size_t lowBytes, size_t highBytes) const;
  static bool offered(uint64_t offers, size_t inBytes);
  // After an eligible call: whether the CMA form ran (every rank offered it) and this rank's seconds for the call.
  // Returns what was decided by this call, for the log ("" when nothing was).
  std::string record(CmaKey key, size_t inBytes, bool ranCma, double seconds);
  // The verdict for calls of coll with inBytes: the band's own, else a neighbour's (kUnknown when neither;
  // identical on every rank).
  Verdict verdict(CmaKey key, size_t inBytes) const;

 private:
  static constexpr int kBands = 64;  // floor(log2(input bytes per rank))
  static constexpr int kCollectives = static_cast<int>(Collective::kCount);
  // The first call after `call` (counted from 0 in a band) that starts a scheduled check of the verdict.
  static uint64_t nextScheduledCheck(uint64_t call);
  struct Band {
    uint64_t calls = 0;                        // eligible calls seen
    double cmaSeconds = 0, stagedSeconds = 0;  // the quick trial's sums
    double previous[2] = {0, 0};               // the last two calls' seconds, newest first
    double baseline = 0;                       // a check: the faster of the two calls before it
    bool checkRanOther = false;                // a check: every call of it so far ran the other form
    bool vote = true;                          // this rank's vote, offered on the call after a trial
    Verdict agreed = Verdict::kUnknown;
    bool confirmed = false;           // a confirming call has decided the band at least once
    bool onPrior = false;             // agreed is the host's prior alone (no check yet): not carried to neighbours
    uint64_t checkAt = kConfirmCall;  // the call that starts the next check (kCheckCalls of the other form)
  };
  // Whether coll reduces (allreduce, reduce, reduce-scatter): where its bands start avoided on the host's prior,
  // they are first checked at kConfirmCall at any size.
  static bool reduces(Collective coll);
  // The host's prior for a band with no decided neighbour: kUnknown (a trial) unless kernel copies measured slow,
  // then kUse for the bands of at least largeCmaMinBytes(coll) where largeBandsStartOnCma (but as the class comment
  // says where the ranks share a cache), else kAvoid.
  Verdict priorVerdict(CmaKey key, int band) const;
  static int bandIndex(size_t inBytes);
  // "allreduce of 1048576+ bytes per rank", "alltoallv": the band, for the log.
  static std::string bandName(CmaKey key, size_t inBytes);
  Band* bandOf(CmaKey key, size_t inBytes);
  const Band* bandOf(CmaKey key, size_t inBytes) const;
  // The nearest decided band's verdict within kNeighbourBands (a band on the prior alone does not count), else the
  // host's prior (kAvoid or kUnknown); *fromPrior says which.
  Verdict neighbourVerdict(CmaKey key, int band, bool* fromPrior = nullptr) const;
  // A band's verdict as its next call starts: a band's first call takes its neighbour's.
  Verdict startingVerdict(CmaKey key, const Band& b, int band) const;
  // Whether the band's next call is one where each rank offers its own vote (after the trial, after a check).
  static bool votesNext(const Band& b, Verdict agreed);
  static void vote(Band& b, double cmaSeconds, double stagedSeconds);

  bool enabled_;
  bool startAvoided_;
  bool largeBandsStartOnCma_;
  bool ranksShareCache_;
  std::array<Band, kBands * kCollectives * 2> bands_{};  // by collective, in place or not, band
};

}  // namespace tern::shm
