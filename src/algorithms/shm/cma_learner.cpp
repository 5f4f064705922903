#include "algorithms/shm/cma_learner.hpp"

#include <algorithm>
#include <bit>

#include "base/error.hpp"

namespace tern::shm {

bool CmaLearner::learns(Collective coll) {
  return coll == Collective::kAllReduce || coll == Collective::kAllGather || coll == Collective::kBroadcast ||
         coll == Collective::kReduce || coll == Collective::kReduceScatter || coll == Collective::kAlltoAll ||
         coll == Collective::kAlltoAllv;
}

bool CmaLearner::reduces(Collective coll) {
  return coll == Collective::kAllReduce || coll == Collective::kReduce || coll == Collective::kReduceScatter;
}

int CmaLearner::bandIndex(size_t inBytes) {
  if (inBytes == 0) return 0;
  return static_cast<int>(std::bit_width(inBytes)) - 1;
}

std::string CmaLearner::bandName(CmaKey key, size_t inBytes) {
  return format("%s%s of %zu+ bytes per rank%s", collectiveName(key.coll), key.inPlace ? " in place" : "",
                size_t{1} << bandIndex(inBytes), key.coll == Collective::kAlltoAllv ? " on average" : "");
}

uint64_t CmaLearner::nextScheduledCheck(uint64_t call) {
  if (call < static_cast<uint64_t>(kConfirmCall)) return kConfirmCall;
  if (call < static_cast<uint64_t>(kReconfirmEvery)) return std::bit_ceil(call + 1);
  return (call / kReconfirmEvery + 1) * kReconfirmEvery;
}

namespace {

// Where a key's bands start in the learner's array: by collective, then out of place before in place.
size_t bandsFirst(CmaKey key, int bandsPerKey) {
  return (static_cast<size_t>(key.coll) * 2 + (key.inPlace ? 1 : 0)) * static_cast<size_t>(bandsPerKey);
}

}  // namespace

CmaLearner::Band* CmaLearner::bandOf(CmaKey key, size_t inBytes) {
  if (!enabled_ || !learns(key.coll)) return nullptr;
  return &bands_[bandsFirst(key, kBands) + static_cast<size_t>(bandIndex(inBytes))];
}

const CmaLearner::Band* CmaLearner::bandOf(CmaKey key, size_t inBytes) const {
  return const_cast<CmaLearner*>(this)->bandOf(key, inBytes);
}

CmaLearner::Verdict CmaLearner::neighbourVerdict(CmaKey key, int band, bool* fromPrior) const {
  if (fromPrior != nullptr) *fromPrior = false;
  // The nearest band with a verdict of its own; of two at the same distance, the smaller.
  for (int d = 1; d <= kNeighbourBands; ++d) {
    for (int other : {band - d, band + d}) {
      if (other < 0 || other >= kBands) continue;
      const Band& o = bands_[bandsFirst(key, kBands) + static_cast<size_t>(other)];
      if (o.agreed != Verdict::kUnknown && !o.onPrior) return o.agreed;
    }
  }
  if (fromPrior != nullptr) *fromPrior = startAvoided_;
  return priorVerdict(key, band);
}

size_t CmaLearner::largeCmaMinBytes(Collective coll) {
  return coll == Collective::kAllReduce ? kLargeAllReduceCmaMinBytes : kLargeCmaMinBytes;
}

CmaLearner::Verdict CmaLearner::priorVerdict(CmaKey key, int band) const {
  if (!startAvoided_) return Verdict::kUnknown;
  const size_t bytes = size_t{1} << band;
  if (!largeBandsStartOnCma_) return Verdict::kAvoid;
  // An all-to-all's CMA form in place first copies every block it sends into private scratch, and its peers then
  // read lines this rank has just written: wherever the ranks sit, its staged form in place measured faster.
  if (key.inPlace && (key.coll == Collective::kAlltoAll || key.coll == Collective::kAlltoAllv)) return Verdict::kAvoid;
  if (!ranksShareCache_) return bytes >= largeCmaMinBytes(key.coll) ? Verdict::kUse : Verdict::kAvoid;
  // Sharing a cache (the class comment). Allreduce's 32 KiB band starts avoided too, like every band below
  // kLargeCmaMinBytes.
  if (key.coll == Collective::kReduce || bytes < kLargeCmaMinBytes) return Verdict::kAvoid;
  // The gathers' CMA forms only read: staging gained less there, and a wrong start on it costs several times what
  // a wrong start on CMA does once the placement changes.
  if (key.coll == Collective::kBroadcast || key.coll == Collective::kAllGather) return Verdict::kUse;
  // An all-to-all's other form moves each block through a slot in that cache: inline where its blocks fit one
  // (two copies and one synchronisation), else in rounds.
  if (key.coll == Collective::kAlltoAll || key.coll == Collective::kAlltoAllv) return Verdict::kAvoid;
  // An allreduce's CMA form in place writes its result back into the very lines it has just read from its peer:
  // one pass over the data, which won the largest calls in place back from staging there.
  if (key.coll == Collective::kAllReduce && key.inPlace && bytes >= kSharedCacheInPlaceAllReduceCmaMinBytes) {
    return Verdict::kUse;
  }
  if (key.coll == Collective::kAllReduce || key.coll == Collective::kReduceScatter) {
    return bytes >= kSharedCacheStagedReductionMinBytes ? Verdict::kAvoid : Verdict::kUse;
  }
  return Verdict::kUse;
}

void CmaLearner::vote(Band& b, double cmaSeconds, double stagedSeconds) {
  // A form that never ran (a peer's buffers ruled CMA out) leaves the current choice in place.
  if (cmaSeconds == 0 || stagedSeconds == 0) {
    b.vote = b.agreed != Verdict::kAvoid;
    return;
  }
  b.vote = cmaSeconds <= stagedSeconds;
}

CmaLearner::Verdict CmaLearner::startingVerdict(CmaKey key, const Band& b, int band) const {
  return b.calls == 0 && b.agreed == Verdict::kUnknown ? neighbourVerdict(key, band) : b.agreed;
}

bool CmaLearner::votesNext(const Band& b, Verdict agreed) {
  return agreed == Verdict::kUnknown ? b.calls >= static_cast<uint64_t>(kQuickTrialCalls)
                                     : b.calls == b.checkAt + kCheckCalls;
}

bool CmaLearner::offer(CmaKey key, size_t inBytes) const {
  const Band* b = bandOf(key, inBytes);
  if (b == nullptr) return true;  // not learned here
  const Verdict agreed = startingVerdict(key, *b, bandIndex(inBytes));
  if (votesNext(*b, agreed)) return b->vote;
  const uint64_t i = b->calls;
  if (agreed == Verdict::kUnknown) return kQuickTrial[i];
  // A check: kCheckCalls calls of the other form, then (votesNext) what the ranks voted.
  const bool current = agreed == Verdict::kUse;
  return i >= b->checkAt && i < b->checkAt + kCheckCalls ? !current : current;
}

bool CmaLearner::anyRankMayOffer(CmaKey key, size_t inBytes) const {
  const Band* b = bandOf(key, inBytes);
  if (b == nullptr) return true;
  return votesNext(*b, startingVerdict(key, *b, bandIndex(inBytes))) || offer(key, inBytes);
}

uint64_t CmaLearner::offers(CmaKey key, size_t lowBytes, size_t highBytes) const {
  uint64_t bits = 0;
  for (int band = bandIndex(lowBytes); band <= bandIndex(highBytes); ++band) {
    if (offer(key, size_t{1} << band)) bits |= uint64_t{1} << band;
  }
  return bits;
}

bool CmaLearner::offered(uint64_t offers, size_t inBytes) { return ((offers >> bandIndex(inBytes)) & 1) != 0; }

std::string CmaLearner::record(CmaKey key, size_t inBytes, bool ranCma, double seconds) {
  Band* b = bandOf(key, inBytes);
  if (b == nullptr) return "";
  const Collective coll = key.coll;
  if (b->calls == 0 && b->agreed == Verdict::kUnknown) {
    bool fromPrior = false;
    b->agreed = neighbourVerdict(key, bandIndex(inBytes), &fromPrior);
    b->onPrior = fromPrior;
    // The early check is for ranks that outnumber the CPUs (the class comment); where they own theirs, a band that
    // starts avoided does so on what the setup measured.
    if (fromPrior && b->agreed == Verdict::kAvoid && inBytes >= kEarlyCheckMinBytes && !reduces(coll) &&
        !largeBandsStartOnCma_)
      b->checkAt = kEarlyCheckCall;
  }
  // Alltoallv's sizes vary from call to call within a band (a router's choices): its calls compare as times per MiB.
  if (coll == Collective::kAlltoAllv && inBytes > 0)
    seconds *= static_cast<double>(size_t{1} << 20) / static_cast<double>(inBytes);
  const uint64_t i = b->calls++;
  const Verdict outcome = ranCma ? Verdict::kUse : Verdict::kAvoid;
  const double before = std::min(b->previous[0], b->previous[1]);
  b->previous[1] = b->previous[0];
  b->previous[0] = seconds;
  if (b->agreed == Verdict::kUnknown) {
    if (i < kQuickTrialCalls && kQuickTrialCounts[i]) (ranCma ? b->cmaSeconds : b->stagedSeconds) += seconds;
    if (i == kQuickTrialCalls - 1) vote(*b, b->cmaSeconds, b->stagedSeconds);
    // The vote's call (or later: until every rank's buffers let CMA run, a peer's may have ruled it out).
    if (i < kQuickTrialCalls) return "";
    b->agreed = outcome;
    return format("%s: CMA %s (trial: CMA %.1f us, staged %.1f us over two calls each; to be confirmed at call %d)",
                  bandName(key, inBytes).c_str(), ranCma ? "used" : "avoided", b->cmaSeconds * 1e6,
                  b->stagedSeconds * 1e6, kConfirmCall);
  }
  if (i >= b->checkAt && i < b->checkAt + kCheckCalls) {
    const bool current = b->agreed == Verdict::kUse;
    // The first calls settle the switch of form (the first pays for it, and the timing of the one after it still
    // swings either way as the ranks fall into step): the check's last call is what counts, against the faster of
    // the current form's two calls before the check, so that one call slowed by an interrupt or a preemption does
    // not switch a band. A call that ran the current form (a peer's buffers ruled the other out) leaves nothing to
    // compare.
    if (i == b->checkAt) {
      b->baseline = before;
      b->checkRanOther = true;
    }
    b->checkRanOther = b->checkRanOther && ranCma != current;
    if (i == b->checkAt + kCheckCalls - 1) {
      if (b->checkRanOther) {
        vote(*b, ranCma ? seconds : b->baseline, ranCma ? b->baseline : seconds);
      } else {
        b->vote = current;
      }
    }
    return "";
  }
  if (i != b->checkAt + kCheckCalls) return "";
  // The call after a check ran what the ranks voted: the band's verdict until the next check, which comes soon when
  // this one switched (a few calls' times decided it).
  const Verdict was = b->agreed;
  b->agreed = outcome;
  b->onPrior = false;
  b->checkAt = outcome != was ? i + kRecheckAfterSwitch : nextScheduledCheck(i);
  if (b->confirmed && outcome == was) return "";
  b->confirmed = true;
  return format("%s: CMA %s (after %d calls of the other form from call %llu)", bandName(key, inBytes).c_str(),
                ranCma ? "used" : "avoided", kCheckCalls, static_cast<unsigned long long>(i - kCheckCalls));
}

CmaLearner::Verdict CmaLearner::verdict(CmaKey key, size_t inBytes) const {
  const Band* b = bandOf(key, inBytes);
  if (b == nullptr) return Verdict::kUnknown;
  return b->agreed != Verdict::kUnknown ? b->agreed : neighbourVerdict(key, bandIndex(inBytes));
}

}  // namespace tern::shm
