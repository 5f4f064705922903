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

std::string CmaLearner::bandName(Collective coll, size_t inBytes) {
  return format("%s of %zu+ bytes per rank%s", collectiveName(coll), size_t{1} << bandIndex(inBytes),
                coll == Collective::kAlltoAllv ? " on average" : "");
}

uint64_t CmaLearner::nextScheduledCheck(uint64_t call) {
  if (call < static_cast<uint64_t>(kConfirmCall)) return kConfirmCall;
  if (call < static_cast<uint64_t>(kReconfirmEvery)) return std::bit_ceil(call + 1);
  return (call / kReconfirmEvery + 1) * kReconfirmEvery;
}

CmaLearner::Band* CmaLearner::bandOf(Collective coll, size_t inBytes) {
  if (!enabled_ || !learns(coll)) return nullptr;
  return &bands_[static_cast<size_t>(coll) * kBands + static_cast<size_t>(bandIndex(inBytes))];
}

const CmaLearner::Band* CmaLearner::bandOf(Collective coll, size_t inBytes) const {
  return const_cast<CmaLearner*>(this)->bandOf(coll, inBytes);
}

CmaLearner::Verdict CmaLearner::neighbourVerdict(Collective coll, int band, bool* fromPrior) const {
  if (fromPrior != nullptr) *fromPrior = false;
  // The nearest band with a verdict of its own; of two at the same distance, the smaller.
  for (int d = 1; d <= kNeighbourBands; ++d) {
    for (int other : {band - d, band + d}) {
      if (other < 0 || other >= kBands) continue;
      const Band& o = bands_[static_cast<size_t>(coll) * kBands + static_cast<size_t>(other)];
      if (o.agreed != Verdict::kUnknown && !o.onPrior) return o.agreed;
    }
  }
  if (fromPrior != nullptr) *fromPrior = startAvoided_;
  return priorVerdict(coll, band);
}

size_t CmaLearner::largeCmaMinBytes(Collective coll) {
  return coll == Collective::kAllReduce ? kLargeAllReduceCmaMinBytes : kLargeCmaMinBytes;
}

CmaLearner::Verdict CmaLearner::priorVerdict(Collective coll, int band) const {
  if (!startAvoided_) return Verdict::kUnknown;
  const bool large = (size_t{1} << band) >= largeCmaMinBytes(coll);
  return largeBandsStartOnCma_ && large ? Verdict::kUse : Verdict::kAvoid;
}

void CmaLearner::vote(Band& b, double cmaSeconds, double stagedSeconds) {
  // A form that never ran (a peer's buffers ruled CMA out) leaves the current choice in place.
  if (cmaSeconds == 0 || stagedSeconds == 0) {
    b.vote = b.agreed != Verdict::kAvoid;
    return;
  }
  b.vote = cmaSeconds <= stagedSeconds;
}

CmaLearner::Verdict CmaLearner::startingVerdict(Collective coll, const Band& b, int band) const {
  return b.calls == 0 && b.agreed == Verdict::kUnknown ? neighbourVerdict(coll, band) : b.agreed;
}

bool CmaLearner::votesNext(const Band& b, Verdict agreed) {
  return agreed == Verdict::kUnknown ? b.calls >= static_cast<uint64_t>(kQuickTrialCalls)
                                     : b.calls == b.checkAt + kCheckCalls;
}

bool CmaLearner::offer(Collective coll, size_t inBytes) const {
  const Band* b = bandOf(coll, inBytes);
  if (b == nullptr) return true;  // not learned here
  const Verdict agreed = startingVerdict(coll, *b, bandIndex(inBytes));
  if (votesNext(*b, agreed)) return b->vote;
  const uint64_t i = b->calls;
  if (agreed == Verdict::kUnknown) return kQuickTrial[i];
  // A check: kCheckCalls calls of the other form, then (votesNext) what the ranks voted.
  const bool current = agreed == Verdict::kUse;
  return i >= b->checkAt && i < b->checkAt + kCheckCalls ? !current : current;
}

bool CmaLearner::anyRankMayOffer(Collective coll, size_t inBytes) const {
  const Band* b = bandOf(coll, inBytes);
  if (b == nullptr) return true;
  return votesNext(*b, startingVerdict(coll, *b, bandIndex(inBytes))) || offer(coll, inBytes);
}

uint64_t CmaLearner::offers(Collective coll, size_t lowBytes, size_t highBytes) const {
  uint64_t bits = 0;
  for (int band = bandIndex(lowBytes); band <= bandIndex(highBytes); ++band) {
    if (offer(coll, size_t{1} << band)) bits |= uint64_t{1} << band;
  }
  return bits;
}

bool CmaLearner::offered(uint64_t offers, size_t inBytes) { return ((offers >> bandIndex(inBytes)) & 1) != 0; }

std::string CmaLearner::record(Collective coll, size_t inBytes, bool ranCma, double seconds) {
  Band* b = bandOf(coll, inBytes);
  if (b == nullptr) return "";
  if (b->calls == 0 && b->agreed == Verdict::kUnknown) {
    bool fromPrior = false;
    b->agreed = neighbourVerdict(coll, bandIndex(inBytes), &fromPrior);
    b->onPrior = fromPrior;
    if (fromPrior && b->agreed == Verdict::kAvoid && inBytes >= kEarlyCheckMinBytes && !reduces(coll))
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
                  bandName(coll, inBytes).c_str(), ranCma ? "used" : "avoided", b->cmaSeconds * 1e6,
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
  return format("%s: CMA %s (after %d calls of the other form from call %llu)", bandName(coll, inBytes).c_str(),
                ranCma ? "used" : "avoided", kCheckCalls, static_cast<unsigned long long>(i - kCheckCalls));
}

CmaLearner::Verdict CmaLearner::verdict(Collective coll, size_t inBytes) const {
  const Band* b = bandOf(coll, inBytes);
  if (b == nullptr) return Verdict::kUnknown;
  return b->agreed != Verdict::kUnknown ? b->agreed : neighbourVerdict(coll, bandIndex(inBytes));
}

}  // namespace tern::shm
