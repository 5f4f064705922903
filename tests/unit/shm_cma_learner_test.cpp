// CmaLearner (src/algorithms/shm/cma_learner.hpp): the trial schedule, the vote, the agreement through the calls'
// outcomes, bands inheriting a neighbour's verdict, the host's prior, the confirmations that keep checking the
// verdict while the job runs, and alltoallv's bands by the mean size over the ranks. The end-to-end path
// (ranks as processes, the forms actually run) is covered by the shared-memory tests that run with the learner on by
// default.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms/shm/cma_learner.hpp"

namespace tern::shm {
namespace {

using Verdict = CmaLearner::Verdict;
constexpr size_t kMiB = size_t{1} << 20;

// Runs one eligible call as a rank whose offer is the only one (a single rank's view, the outcome = its offer);
// cmaUs / stagedUs: what each form takes. Returns whether CMA ran.
bool call(CmaLearner& l, Collective c, size_t bytes, double cmaUs, double stagedUs) {
  const bool cma = l.offer(c, bytes);
  l.record(c, bytes, cma, (cma ? cmaUs : stagedUs) * 1e-6);
  return cma;
}

TEST(CmaLearner, QuickTrialRunsTheMirroredScheduleThenKeepsTheFasterForm) {
  CmaLearner l(true);
  std::vector<bool> ran;
  ran.reserve(64);
  for (int i = 0; i < 10; ++i) ran.push_back(call(l, Collective::kAllReduce, 2 * kMiB, 900, 300));
  const std::vector<bool> expected = {true, true, false, false, false, true, true, false, false, false};
  EXPECT_EQ(ran, expected);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, 2 * kMiB), Verdict::kAvoid);
  // The same band (2-4 MiB) only; other collectives are untouched.
  EXPECT_EQ(l.verdict(Collective::kAllReduce, 3 * kMiB), Verdict::kAvoid);
  EXPECT_EQ(l.verdict(Collective::kAllGather, 2 * kMiB), Verdict::kUnknown);
}

TEST(CmaLearner, AFasterCmaIsKept) {
  CmaLearner l(true);
  for (int i = 0; i < 7; ++i) call(l, Collective::kAllGather, kMiB, 100, 300);
  EXPECT_TRUE(call(l, Collective::kAllGather, kMiB, 100, 300));
  EXPECT_EQ(l.verdict(Collective::kAllGather, kMiB), Verdict::kUse);
}

TEST(CmaLearner, TheSwitchCallsAndTheColdCallDoNotCount) {
  // Calls 0, 2 and 5 (the cold one and the first after each switch) are slow whatever the form; the counted ones say
  // CMA is faster.
  CmaLearner l(true);
  const std::vector<double> us = {5000, 100, 5000, 300, 300, 5000, 100};
  for (double t : us) {
    const bool cma = l.offer(Collective::kBroadcast, kMiB);
    l.record(Collective::kBroadcast, kMiB, cma, t * 1e-6);
  }
  EXPECT_TRUE(l.offer(Collective::kBroadcast, kMiB));
}

TEST(CmaLearner, AnyRankVotingStagedMakesEveryRankStage) {
  // Two ranks: rank 0 finds CMA faster, rank 1 staging. The vote's call runs CMA only if both offer it; both record
  // the same outcome and agree.
  CmaLearner r0(true), r1(true);
  for (int i = 0; i < 7; ++i) {
    const bool o0 = r0.offer(Collective::kAllReduce, kMiB), o1 = r1.offer(Collective::kAllReduce, kMiB);
    ASSERT_EQ(o0, o1) << "the trial schedule must be the same on every rank (call " << i << ")";
    r0.record(Collective::kAllReduce, kMiB, o0, (o0 ? 100 : 300) * 1e-6);
    r1.record(Collective::kAllReduce, kMiB, o1, (o1 ? 300 : 100) * 1e-6);
  }
  const bool o0 = r0.offer(Collective::kAllReduce, kMiB), o1 = r1.offer(Collective::kAllReduce, kMiB);
  EXPECT_TRUE(o0);
  EXPECT_FALSE(o1);
  const bool ran = o0 && o1;
  r0.record(Collective::kAllReduce, kMiB, ran, 1e-4);
  r1.record(Collective::kAllReduce, kMiB, ran, 1e-4);
  EXPECT_EQ(r0.verdict(Collective::kAllReduce, kMiB), Verdict::kAvoid);
  EXPECT_EQ(r1.verdict(Collective::kAllReduce, kMiB), Verdict::kAvoid);
}

TEST(CmaLearner, NearbyBandsStartFromADecidedNeighbourWithoutATrial) {
  CmaLearner l(true);
  for (int i = 0; i < 8; ++i) call(l, Collective::kAllReduce, kMiB, 900, 300);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, 4 * kMiB), Verdict::kAvoid);     // two bands up: inherited
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMiB / 16), Verdict::kAvoid);    // four down
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMiB / 32), Verdict::kUnknown);  // five: too far
  EXPECT_FALSE(call(l, Collective::kAllReduce, 4 * kMiB, 900, 300)) << "an inherited band runs no CMA trial";
}

TEST(CmaLearner, AProvisionalVerdictIsConfirmedByTheOtherForm) {
  CmaLearner l(true);
  for (int i = 0; i < 8; ++i) call(l, Collective::kAllReduce, kMiB, 900, 300);  // decided: avoid
  // A larger band inherits "avoid", but there CMA is faster: the confirming call finds it and switches.
  std::vector<bool> ran;
  ran.reserve(64);
  for (int i = 0; i < CmaLearner::kConfirmCall + 4; ++i)
    ran.push_back(call(l, Collective::kAllReduce, 4 * kMiB, 100, 300));
  for (int i = 0; i < CmaLearner::kConfirmCall; ++i) EXPECT_FALSE(ran[i]) << i;
  EXPECT_TRUE(ran[CmaLearner::kConfirmCall]);      // the check's switch call
  EXPECT_TRUE(ran[CmaLearner::kConfirmCall + 1]);  // its counted calls
  EXPECT_TRUE(ran[CmaLearner::kConfirmCall + 2]);
  EXPECT_TRUE(ran[CmaLearner::kConfirmCall + 3]);  // the vote, decided until the next check
  EXPECT_EQ(l.verdict(Collective::kAllReduce, 4 * kMiB), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMiB), Verdict::kAvoid) << "the first band keeps its own verdict";
}

TEST(CmaLearner, SlowKernelCopiesStartEveryBandAvoidedWhereRanksShareCpusAndSmallBandsFirstCheckAtTheConfirmingCall) {
  CmaLearner l(true, /*startAvoided=*/true, /*largeBandsStartOnCma=*/false);
  EXPECT_EQ(l.verdict(Collective::kAllGather, kMiB), Verdict::kAvoid);
  EXPECT_EQ(l.verdict(Collective::kAlltoAllv, kMiB), Verdict::kAvoid) << "alltoallv starts from the host's prior too";
  constexpr size_t kSmall = CmaLearner::kLargeCmaMinBytes / 4;
  std::vector<bool> ran;
  ran.reserve(64);
  for (int i = 0; i < CmaLearner::kConfirmCall + 5; ++i)
    ran.push_back(call(l, Collective::kAllReduce, kSmall, 900, 300));
  for (int i = 0; i < CmaLearner::kConfirmCall; ++i) EXPECT_FALSE(ran[i]) << "no trial on call " << i;
  for (int k = 0; k < CmaLearner::kCheckCalls; ++k) EXPECT_TRUE(ran[CmaLearner::kConfirmCall + k]) << k;
  EXPECT_FALSE(ran[CmaLearner::kConfirmCall + 3]) << "staging stays faster";
  EXPECT_FALSE(ran[CmaLearner::kConfirmCall + 4]);
  // Where CMA turns out faster after all, the check finds it.
  for (int i = 0; i <= CmaLearner::kConfirmCall + 3; ++i) call(l, Collective::kBroadcast, kSmall, 100, 300);
  EXPECT_EQ(l.verdict(Collective::kBroadcast, kSmall), Verdict::kUse);
}

// The setup probe's verdict is least reliable for larger calls (it compares copies in one core's cache, while
// staging's second copy, or a reduction's second pass, reads lines another core wrote): where the host's ranks own
// their CPUs the bands from kLargeCmaMinBytes start on CMA, so that a short run gets it without a trial, and the
// check at kConfirmCall corrects a wrong start.
TEST(CmaLearner, LargerBandsStartOnCmaWhereRanksOwnCpus) {
  CmaLearner l(true, /*startAvoided=*/true, /*largeBandsStartOnCma=*/true);
  constexpr int kCheck = CmaLearner::kConfirmCall;
  constexpr int kCalls = kCheck + 8;
  EXPECT_EQ(l.verdict(Collective::kAllGather, kMiB), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kAlltoAllv, kMiB), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMiB), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kReduceScatter, kMiB), Verdict::kUse);
  std::vector<bool> ran;
  ran.reserve(kCalls);
  // CMA faster: every call runs it but the check's kCheckCalls calls of staging.
  for (int i = 0; i < kCalls; ++i) ran.push_back(call(l, Collective::kAllGather, kMiB, 100, 300));
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(ran[i], i < kCheck || i >= kCheck + CmaLearner::kCheckCalls) << i;
  EXPECT_EQ(l.verdict(Collective::kAllGather, kMiB), Verdict::kUse);
  // Staging faster: CMA until the check, staging from it on.
  ran.clear();
  for (int i = 0; i < kCalls; ++i) ran.push_back(call(l, Collective::kBroadcast, kMiB, 900, 300));
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(ran[i], i < kCheck) << i;
  EXPECT_EQ(l.verdict(Collective::kBroadcast, kMiB), Verdict::kAvoid);
  // The smallest band that starts on CMA, and the one below it, which starts avoided; allreduce's is a band lower.
  constexpr size_t kMin = CmaLearner::kLargeCmaMinBytes;
  EXPECT_TRUE(call(l, Collective::kAlltoAll, kMin, 100, 300));
  EXPECT_FALSE(call(l, Collective::kAlltoAll, kMin / 2, 100, 300));
  constexpr size_t kMinAllReduce = CmaLearner::kLargeAllReduceCmaMinBytes;
  static_assert(kMinAllReduce < kMin);
  EXPECT_EQ(CmaLearner::largeCmaMinBytes(Collective::kAllReduce), kMinAllReduce);
  EXPECT_EQ(CmaLearner::largeCmaMinBytes(Collective::kReduceScatter), kMin);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMinAllReduce), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMinAllReduce / 2), Verdict::kAvoid);
  EXPECT_EQ(l.verdict(Collective::kReduceScatter, kMinAllReduce), Verdict::kAvoid);
  // Reductions alike: CMA from the first call where it is faster; where staging is, CMA until the check.
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter}) {
    ran.clear();
    for (int i = 0; i < kCalls; ++i) ran.push_back(call(l, c, 4 * kMiB, 100, 300));
    for (int i = 0; i < kCalls; ++i) EXPECT_EQ(ran[i], i < kCheck || i >= kCheck + CmaLearner::kCheckCalls) << i;
    ran.clear();
    for (int i = 0; i < kCalls; ++i) ran.push_back(call(l, c, kMin / 4, 900, 300));
    for (int i = 0; i < kCheck; ++i) EXPECT_FALSE(ran[i]) << "a small band starts avoided, call " << i;
  }
}

// Where the host's ranks outnumber its CPUs, bands of the collectives that only move data start avoided on that
// prior, and those of kEarlyCheckMinBytes and up are checked from kEarlyCheckCall, so that a short run gets CMA where
// it pays.
TEST(CmaLearner, WhereRanksShareCpusLargerBandsThatOnlyMoveDataAreCheckedEarly) {
  CmaLearner l(true, /*startAvoided=*/true, /*largeBandsStartOnCma=*/false);
  constexpr int kEarly = CmaLearner::kEarlyCheckCall;
  std::vector<bool> ran;
  ran.reserve(64);
  for (int i = 0; i < 12; ++i) ran.push_back(call(l, Collective::kAllGather, kMiB, 100, 300));
  for (int i = 0; i < kEarly; ++i) EXPECT_FALSE(ran[i]) << i;
  for (int i = kEarly; i < 12; ++i) EXPECT_TRUE(ran[i]) << "CMA from the early check on, call " << i;
  EXPECT_EQ(l.verdict(Collective::kAllGather, kMiB), Verdict::kUse);
  // A band decided by a check carries to its neighbours: no check of their own until kConfirmCall.
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(call(l, Collective::kAllGather, 4 * kMiB, 900, 300)) << i;
  // Where staging is faster, the early check costs kCheckCalls calls and the band stays avoided.
  ran.clear();
  for (int i = 0; i < 12; ++i) ran.push_back(call(l, Collective::kBroadcast, kMiB, 900, 300));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(ran[i], i >= kEarly && i < kEarly + CmaLearner::kCheckCalls) << i;
  EXPECT_EQ(l.verdict(Collective::kBroadcast, kMiB), Verdict::kAvoid);
  // A small band still on the prior does not carry: the mid-size band next to it is checked early all the same.
  constexpr size_t kMid = CmaLearner::kEarlyCheckMinBytes;
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(call(l, Collective::kAlltoAll, kMid / 2, 100, 300)) << i;
  ran.clear();
  for (int i = 0; i < 8; ++i) ran.push_back(call(l, Collective::kAlltoAll, kMid, 100, 300));
  EXPECT_FALSE(ran[0]);
  EXPECT_TRUE(ran[kEarly]);
  EXPECT_TRUE(ran[7]);
  // Reductions keep the prior until kConfirmCall at every size.
  for (Collective c : {Collective::kAllReduce, Collective::kReduce, Collective::kReduceScatter}) {
    for (int i = 0; i < CmaLearner::kConfirmCall; ++i) EXPECT_FALSE(call(l, c, kMiB, 100, 300)) << i;
    EXPECT_TRUE(call(l, c, kMiB, 100, 300));
  }
}

// Where the ranks own their CPUs and share a cache, the prior stages the reductions' large bands (in place too but
// allreduce's largest bands), reduce and all-to-all(v) at every size, and allreduce's smallest CMA band; the
// reductions' mid-size bands, the gathers and allreduce's largest bands in place start on CMA. No early check: the
// prior is what the setup measured. The checks still correct it.
TEST(CmaLearner, WhereRanksShareACacheLargeOutOfPlaceBandsStartStaged) {
  CmaLearner l(true, /*startAvoided=*/true, /*largeBandsStartOnCma=*/true, /*ranksShareCache=*/true);
  constexpr size_t kLarge = size_t{1} << 20;
  for (Collective c : {Collective::kAlltoAll, Collective::kAlltoAllv}) {
    for (bool inPlace : {false, true}) {
      for (size_t bytes = CmaLearner::kLargeCmaMinBytes / 2; bytes <= 64 * kLarge; bytes *= 2) {
        EXPECT_EQ(l.verdict({c, inPlace}, bytes), Verdict::kAvoid) << collectiveName(c) << inPlace << " " << bytes;
      }
    }
  }
  constexpr size_t kReductionLarge = CmaLearner::kSharedCacheStagedReductionMinBytes;
  constexpr size_t kInPlaceCma = CmaLearner::kSharedCacheInPlaceAllReduceCmaMinBytes;
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter}) {
    for (bool inPlace : {false, true}) {
      const CmaKey key{c, inPlace};
      EXPECT_EQ(l.verdict(key, kReductionLarge), Verdict::kAvoid) << collectiveName(c) << inPlace;
      EXPECT_EQ(l.verdict(key, kInPlaceCma / 2), Verdict::kAvoid) << collectiveName(c) << inPlace;
      EXPECT_EQ(l.verdict(key, kReductionLarge / 2), Verdict::kUse) << collectiveName(c) << inPlace;
      EXPECT_EQ(l.verdict(key, CmaLearner::kLargeCmaMinBytes / 2), Verdict::kAvoid) << collectiveName(c) << inPlace;
    }
  }
  EXPECT_EQ(l.verdict({Collective::kAllReduce, true}, kInPlaceCma), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kInPlaceCma), Verdict::kAvoid);
  EXPECT_EQ(l.verdict({Collective::kReduceScatter, true}, 16 * kLarge), Verdict::kAvoid);
  EXPECT_EQ(l.verdict(Collective::kAllGather, 16 * kLarge), Verdict::kUse);
  EXPECT_EQ(l.verdict({Collective::kAllGather, true}, 16 * kLarge), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kBroadcast, 16 * kLarge), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kReduce, kLarge / 4), Verdict::kAvoid);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, CmaLearner::kLargeAllReduceCmaMinBytes), Verdict::kAvoid);
  // Staged until the first check at kConfirmCall, where a faster CMA takes over; no early check.
  std::vector<bool> ran;
  for (int i = 0; i < CmaLearner::kConfirmCall + 8; ++i)
    ran.push_back(call(l, Collective::kAlltoAll, 4 * kLarge, 100, 300));
  for (int i = 0; i < CmaLearner::kConfirmCall; ++i) EXPECT_FALSE(ran[i]) << i;
  for (int i = CmaLearner::kConfirmCall; i < CmaLearner::kConfirmCall + 8; ++i) EXPECT_TRUE(ran[i]) << i;
  // Without a shared cache the same bands start on CMA.
  CmaLearner apart(true, true, true, false);
  EXPECT_EQ(apart.verdict(Collective::kAllReduce, kLarge), Verdict::kUse);
  EXPECT_EQ(apart.verdict(Collective::kReduce, kLarge), Verdict::kUse);
  EXPECT_EQ(apart.verdict({Collective::kAlltoAll, true}, kLarge), Verdict::kAvoid);  // in place: everywhere
  EXPECT_EQ(apart.verdict({Collective::kAlltoAllv, true}, kLarge), Verdict::kAvoid);
  EXPECT_EQ(apart.verdict(Collective::kAlltoAll, kLarge / 4), Verdict::kUse);
}

// Calls in place and out of place learn apart: a verdict of one says nothing of the other.
TEST(CmaLearner, InPlaceAndOutOfPlaceBandsLearnApart) {
  CmaLearner l(true);
  for (int i = 0; i < 8; ++i) call(l, Collective::kAllReduce, kMiB, 100, 300);  // out of place: use
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMiB), Verdict::kUse);
  EXPECT_EQ(l.verdict({Collective::kAllReduce, true}, kMiB), Verdict::kUnknown);
  const CmaKey inPlace{Collective::kAllReduce, true};
  for (int i = 0; i < 8; ++i) {
    const bool cma = l.offer(inPlace, kMiB);
    l.record(inPlace, kMiB, cma, (cma ? 300 : 100) * 1e-6);
  }
  EXPECT_EQ(l.verdict(inPlace, kMiB), Verdict::kAvoid);
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMiB), Verdict::kUse);
}

TEST(CmaLearner, ACheckDoesNotCountItsSwitchCall) {
  // Kernel copies measured slow at setup, but CMA is faster here; the check's first call of it pays for the switch
  // (slow whatever the form), and only the second is compared.
  CmaLearner l(true, /*startAvoided=*/true);
  for (int i = 0; i < CmaLearner::kConfirmCall + 4; ++i) {
    const bool cma = l.offer(Collective::kAlltoAll, kMiB);
    const double us = i == CmaLearner::kConfirmCall ? 5000 : (cma ? 100 : 300);
    l.record(Collective::kAlltoAll, kMiB, cma, us * 1e-6);
  }
  EXPECT_EQ(l.verdict(Collective::kAlltoAll, kMiB), Verdict::kUse);
}

// A choice every rank must make alike (whether a call goes where the offers are exchanged) cannot follow one rank's
// vote: anyRankMayOffer says yes on the calls where each rank offers its own vote, and follows offer() elsewhere.
TEST(CmaLearner, AnyRankMayOfferOnTheCallsWhereRanksVote) {
  CmaLearner l(true);
  for (int i = 0; i < CmaLearner::kQuickTrialCalls; ++i) {
    EXPECT_EQ(l.anyRankMayOffer(Collective::kAllGather, kMiB), l.offer(Collective::kAllGather, kMiB)) << i;
    call(l, Collective::kAllGather, kMiB, 900, 300);
  }
  EXPECT_FALSE(l.offer(Collective::kAllGather, kMiB)) << "this rank votes for staging";
  EXPECT_TRUE(l.anyRankMayOffer(Collective::kAllGather, kMiB)) << "another rank may vote for CMA";
  call(l, Collective::kAllGather, kMiB, 900, 300);
  for (int i = CmaLearner::kQuickTrialCalls + 1; i < CmaLearner::kConfirmCall + 5; ++i) {
    const bool vote = i == CmaLearner::kConfirmCall + CmaLearner::kCheckCalls;
    EXPECT_EQ(l.anyRankMayOffer(Collective::kAllGather, kMiB), vote || l.offer(Collective::kAllGather, kMiB)) << i;
    call(l, Collective::kAllGather, kMiB, 900, 300);
  }
}

TEST(CmaLearner, OffLearnsNothingAndAlwaysOffers) {
  CmaLearner l(false);
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(call(l, Collective::kAllReduce, kMiB, 900, 300));
  EXPECT_EQ(l.verdict(Collective::kAllReduce, kMiB), Verdict::kUnknown);
  EXPECT_TRUE(CmaLearner::learns(Collective::kAlltoAllv));
  EXPECT_TRUE(CmaLearner::learns(Collective::kReduce));
  EXPECT_FALSE(CmaLearner::learns(Collective::kBarrier));
}

// Which form pays can change under a running job (a VM's vCPUs moved to cores that share no cache make staging
// several times slower): the verdict is checked again from calls 32, 64, 128, ..., 1024 and then every 1024, each
// check kCheckCalls calls of the other form, and the band follows what the check finds.
TEST(CmaLearner, TheVerdictIsCheckedAgainWhileTheJobRuns) {
  CmaLearner l(true, /*startAvoided=*/true);
  constexpr size_t kBytes = CmaLearner::kLargeCmaMinBytes / 2;  // a band that starts avoided
  std::vector<bool> ran;
  double cmaUs = 100, stagedUs = 300;  // CMA pays at first
  for (int i = 0; i < 5000; ++i) {
    if (i == 200 || i == 2100) std::swap(cmaUs, stagedUs);  // staging pays from call 200, CMA again from 2100
    ran.push_back(call(l, Collective::kAllGather, kBytes, cmaUs, stagedUs));
    if (i == 40) {
      EXPECT_EQ(l.verdict(Collective::kAllGather, kBytes), Verdict::kUse) << "switched at the check at 32";
    } else if (i == 300) {
      EXPECT_EQ(l.verdict(Collective::kAllGather, kBytes), Verdict::kAvoid) << "switched back at 256";
    } else if (i == 3100) {
      EXPECT_EQ(l.verdict(Collective::kAllGather, kBytes), Verdict::kUse) << "switched again at 3072";
    }
  }
  // A check that finds the verdict right is kCheckCalls calls of the other form; one that finds it wrong switches
  // there. (A change of form after kCheckCalls + 1 calls of the same form starts a check, not the return from one.)
  constexpr int k = CmaLearner::kCheckCalls;
  std::vector<int> checksOnly, switches;
  for (int i = k + 1; i + k < static_cast<int>(ran.size()); ++i) {
    if (ran[i] == ran[i - 1]) continue;
    bool settled = true;
    for (int j = 2; j <= k + 1; ++j) settled = settled && ran[i - j] == ran[i - 1];
    if (!settled) continue;
    bool held = true;
    for (int j = 1; j < k; ++j) held = held && ran[i + j] == ran[i];
    if (!held) continue;
    (ran[i + k] == ran[i] ? switches : checksOnly).push_back(i);
  }
  // Each switch is checked again kRecheckAfterSwitch calls after its vote.
  EXPECT_EQ(checksOnly, (std::vector<int>{43, 64, 128, 267, 512, 1024, 2048, 3083, 4096}));
  EXPECT_EQ(switches, (std::vector<int>{32, 256, 3072}));
}

// One call slowed by chance (an interrupt, a preemption) does not switch a band: a check compares the faster of its
// calls with the faster of the two before it.
TEST(CmaLearner, OneSlowCallDoesNotSwitchABand) {
  CmaLearner l(true, /*startAvoided=*/true);
  std::vector<bool> ran;
  for (int i = 0; i < 600; ++i) {
    const bool cma = l.offer(Collective::kAllGather, kMiB);
    // CMA pays throughout; the last CMA call before the check at 512 is slow.
    const double us = cma ? (i == 511 ? 1000 : 100) : 300;
    l.record(Collective::kAllGather, kMiB, cma, us * 1e-6);
    ran.push_back(cma);
  }
  for (int i = 512; i < 512 + CmaLearner::kCheckCalls; ++i) EXPECT_FALSE(ran[i]) << "the check: " << i;
  for (int i = 512 + CmaLearner::kCheckCalls; i < 600; ++i) EXPECT_TRUE(ran[i]) << "kept: " << i;
  EXPECT_EQ(l.verdict(Collective::kAllGather, kMiB), Verdict::kUse);
}

// Slow calls on both sides of a check can still switch a band the wrong way; the check that follows soon after
// switches it back, instead of leaving the wrong form until the next scheduled check.
TEST(CmaLearner, AWrongSwitchIsUndoneByTheCheckSoonAfter) {
  CmaLearner l(true, /*startAvoided=*/true);
  std::vector<bool> ran;
  for (int i = 0; i < 600; ++i) {
    const bool cma = l.offer(Collective::kAllGather, kMiB);
    // CMA pays throughout, except the two CMA calls before the check at 512, which took ten times longer.
    const double us = cma ? (i == 510 || i == 511 ? 1000 : 100) : 300;
    l.record(Collective::kAllGather, kMiB, cma, us * 1e-6);
    ran.push_back(cma);
  }
  constexpr int k = CmaLearner::kCheckCalls, vote = 512 + k;
  EXPECT_FALSE(ran[vote]) << "the slow baseline made staging look faster: switched";
  const int recheck = vote + CmaLearner::kRecheckAfterSwitch;
  for (int i = vote; i < recheck; ++i) EXPECT_FALSE(ran[i]) << i;
  for (int i = recheck; i <= recheck + k; ++i) EXPECT_TRUE(ran[i]) << "the check after the switch, and its vote: " << i;
  // That switch too is checked soon after (kCheckCalls staged calls); CMA from then on.
  const int again = recheck + k + CmaLearner::kRecheckAfterSwitch;
  for (int i = recheck + k; i < 600; ++i) EXPECT_EQ(ran[i], i < again || i >= again + k) << i;
  EXPECT_EQ(l.verdict(Collective::kAllGather, kMiB), Verdict::kUse);
}

// Alltoallv's sizes differ from rank to rank, so it learns by the mean input per rank, known only once every rank's
// table is read: a rank offers for every band the call may fall in, and the call takes its band's bit.
TEST(CmaLearner, AlltoallvLearnsPerBandOfTheMeanSizeFromOffersForEveryBand) {
  CmaLearner l(true);
  for (int i = 0; i < 8; ++i) call(l, Collective::kAlltoAllv, kMiB + 1000 * i, 100, 300);  // decided: use
  EXPECT_EQ(l.verdict(Collective::kAlltoAllv, kMiB), Verdict::kUse);
  EXPECT_EQ(l.verdict(Collective::kAlltoAllv, 64 * kMiB), Verdict::kUnknown) << "a band far away learns on its own";
  EXPECT_EQ(l.verdict(Collective::kAlltoAll, kMiB), Verdict::kUnknown) << "alltoall learns on its own";
  // Bands 2^10 .. 2^30: the decided band and its neighbours offer CMA; bands beyond the neighbours start a trial
  // (its first call offers CMA too); no bit outside the bands asked for.
  const uint64_t bits = l.offers(Collective::kAlltoAllv, 1024, size_t{1} << 30);
  for (int band = 0; band < 64; ++band) {
    const bool inside = band >= 10 && band <= 30;
    EXPECT_EQ(((bits >> band) & 1) != 0, inside && l.offer(Collective::kAlltoAllv, size_t{1} << band)) << band;
  }
  EXPECT_TRUE(CmaLearner::offered(bits, kMiB + 12345));
  EXPECT_FALSE(CmaLearner::offered(bits, size_t{1} << 31));
  // A band whose trial has reached its staged calls offers staging, and only that band.
  for (int i = 0; i < 2; ++i) call(l, Collective::kAlltoAllv, 64 * kMiB, 300, 100);
  const uint64_t after = l.offers(Collective::kAlltoAllv, 1024, size_t{1} << 30);
  EXPECT_FALSE(CmaLearner::offered(after, 64 * kMiB));
  EXPECT_EQ(after | (uint64_t{1} << 26), bits);
}

}  // namespace
}  // namespace tern::shm
