#include "algorithms/shm/cma_learner.hpp"

#include <bit>

#include "base/error.hpp"

namespace tern::shm {

bool CmaLearner::learns(Collective coll) {
  // Alltoallv's sizes differ from rank to rank (its band would too); it follows alltoall's verdict instead.
  return coll == Collective::kAllReduce || coll == Collective::kAllGather || coll == Collective::kBroadcast ||
         coll == Collective::kAlltoAll;
}

int CmaLearner::bandIndex(size_t inBytes) { return inBytes == 0 ? 0 : static_cast<int>(std::bit_width(inBytes)) - 1; }

CmaLearner::Band* CmaLearner::bandOf(Collective coll, size_t inBytes) {
  if (!enabled_ || !learns(coll)) return nullptr;
  return &bands_[static_cast<size_t>(coll) * kBands + static_cast<size_t>(bandIndex(inBytes))];
}

const CmaLearner::Band* CmaLearner::bandOf(Collective coll, size_t inBytes) const {
  return const_cast<CmaLearner*>(this)->bandOf(coll, inBytes);
}

CmaLearner::Verdict CmaLearner::neighbourVerdict(Collective coll, int band) const {
  // The nearest band with a verdict of its own; of two at the same distance, the smaller.
  for (int d = 1; d <= kNeighbourBands; ++d) {
    for (int other : {band - d, band + d}) {
      if (other < 0 || other >= kBands) continue;
      const Verdict v = bands_[static_cast<size_t>(coll) * kBands + static_cast<size_t>(other)].agreed;
      if (v != Verdict::kUnknown) return v;
    }
  }
  return startAvoided_ ? Verdict::kAvoid : Verdict::kUnknown;
}

void CmaLearner::vote(Band& b, double cmaSeconds, double stagedSeconds) {
  // A form that never ran (a peer's buffers ruled CMA out) leaves the current choice in place.
  if (cmaSeconds == 0 || stagedSeconds == 0) {
    b.vote = b.agreed != Verdict::kAvoid;
    return;
  }
  b.vote = cmaSeconds <= stagedSeconds;
}

bool CmaLearner::offer(Collective coll, size_t inBytes) {
  Band* b = bandOf(coll, inBytes);
  if (b == nullptr) return true;  // not learned here
  if (b->calls == 0 && b->agreed == Verdict::kUnknown) {
    b->agreed = neighbourVerdict(coll, bandIndex(inBytes));
    refreshOverall(coll);
  }
  const int i = b->calls;
  if (b->agreed == Verdict::kUnknown) {
    if (i < kQuickTrialCalls) return kQuickTrial[i];
    return b->vote;
  }
  const bool current = b->agreed == Verdict::kUse;
  if (b->settled || i < kConfirmCall) return current;
  if (i == kConfirmCall) return !current;  // the confirming trial of the other form
  return b->vote;
}

std::string CmaLearner::record(Collective coll, size_t inBytes, bool ranCma, double seconds) {
  Band* b = bandOf(coll, inBytes);
  if (b == nullptr || b->settled) return "";
  const int i = b->calls++;
  const Verdict outcome = ranCma ? Verdict::kUse : Verdict::kAvoid;
  const double before = (b->previous[0] + b->previous[1]) / 2;
  b->previous[1] = b->previous[0];
  b->previous[0] = seconds;
  if (b->agreed == Verdict::kUnknown) {
    if (i < kQuickTrialCalls && kQuickTrialCounts[i]) (ranCma ? b->cmaSeconds : b->stagedSeconds) += seconds;
    if (i == kQuickTrialCalls - 1) vote(*b, b->cmaSeconds, b->stagedSeconds);
    // The vote's call (or later: until every rank's buffers let CMA run, a peer's may have ruled it out).
    if (i < kQuickTrialCalls) return "";
    b->agreed = outcome;
    refreshOverall(coll);
    return format(
        "%s of %zu+ bytes per rank: CMA %s (trial: CMA %.1f us, staged %.1f us over two calls each; "
        "to be confirmed at call %d)",
        collectiveName(coll), size_t{1} << bandIndex(inBytes), ranCma ? "used" : "avoided", b->cmaSeconds * 1e6,
        b->stagedSeconds * 1e6, kConfirmCall);
  }
  if (i == kConfirmCall) {
    const bool current = b->agreed == Verdict::kUse;
    if (ranCma != current) {
      vote(*b, ranCma ? seconds : before, ranCma ? before : seconds);
    } else {
      b->vote = current;  // the other form could not run (a peer's buffers): nothing to compare
    }
  }
  if (i > kConfirmCall) {
    b->agreed = outcome;
    refreshOverall(coll);
    b->settled = true;
    return format("%s of %zu+ bytes per rank: CMA %s for good (after a call of the other form at call %d)",
                  collectiveName(coll), size_t{1} << bandIndex(inBytes), ranCma ? "used" : "avoided", kConfirmCall);
  }
  return "";
}

CmaLearner::Verdict CmaLearner::verdict(Collective coll, size_t inBytes) const {
  const Band* b = bandOf(coll, inBytes);
  if (b == nullptr) return Verdict::kUnknown;
  return b->agreed != Verdict::kUnknown ? b->agreed : neighbourVerdict(coll, bandIndex(inBytes));
}

CmaLearner::Verdict CmaLearner::overall(Collective coll) const {
  if (!enabled_ || !learns(coll)) return Verdict::kUnknown;
  return overall_[static_cast<size_t>(coll)];
}

void CmaLearner::refreshOverall(Collective coll) {
  bool use = false, avoid = false;
  for (int b = 0; b < kBands; ++b) {
    const Verdict v = bands_[static_cast<size_t>(coll) * kBands + static_cast<size_t>(b)].agreed;
    use = use || v == Verdict::kUse;
    avoid = avoid || v == Verdict::kAvoid;
  }
  Verdict& v = overall_[static_cast<size_t>(coll)];
  if (!use && !avoid) {
    v = startAvoided_ ? Verdict::kAvoid : Verdict::kUnknown;
  } else if (use == avoid) {
    v = Verdict::kUnknown;
  } else {
    v = use ? Verdict::kUse : Verdict::kAvoid;
  }
}

}  // namespace tern::shm
