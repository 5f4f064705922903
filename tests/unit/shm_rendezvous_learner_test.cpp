// RendezvousLearner (src/transport/shm/rendezvous_learner.hpp): the prior until something is published, the first
// check and its uncounted switch message, the checks that come back by time and keep following the faster form while
// the job runs, a sender that is late to follow or never follows, and the size bands. The end-to-end path (two
// processes, the forms actually sent) is in shm_rendezvous_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "transport/shm/rendezvous_learner.hpp"
#include "transport/shm/shm_layout.hpp"

namespace tern::shm {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// A sender that reads the published word `lag` messages late, and a receiver that records what each form costs
// (us for the message, by form and message index); messages follow each other without a gap, so the clock advances
// by their times. Returns the forms sent (true: rendezvous); startNs[i]: when message i began.
std::vector<bool> exchange(RendezvousLearner& l, bool prior, int messages, size_t bytes,
                           const std::function<double(bool rendezvous, int index)>& us, int lag = 0,
                           std::vector<int64_t>* startNs = nullptr) {
  std::deque<uint64_t> seen(static_cast<size_t>(lag) + 1, l.published());
  std::vector<bool> forms;
  int64_t now = 1;
  for (int i = 0; i < messages; ++i) {
    const bool rendezvous = RendezvousLearner::wantsRendezvous(seen.front(), bytes, prior);
    forms.push_back(rendezvous);
    if (startNs != nullptr) startNs->push_back(now);
    const double took = us(rendezvous, i);
    now += static_cast<int64_t>(took * 1e3);
    l.record(bytes, rendezvous, took * 1e-6, now);
    seen.pop_front();
    seen.push_back(l.published());
  }
  return forms;
}

TEST(RendezvousLearner, TheSenderKeepsThePriorUntilTheReceiverPublishes) {
  EXPECT_TRUE(RendezvousLearner::wantsRendezvous(0, kMiB, true));
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(0, kMiB, false));
  RendezvousLearner off(false, false);
  EXPECT_FALSE(off.record(kMiB, false, 1e-3, 1));
  EXPECT_EQ(off.published(), 0u);
}

TEST(RendezvousLearner, AFasterKernelCopyIsTakenAfterTheFirstCheck) {
  RendezvousLearner l(true, false);
  const auto forms = exchange(l, false, 12, kMiB, [](bool r, int) { return r ? 100.0 : 500.0; });
  // Staged: the cold message and two counted; rendezvous: the switch message and two counted, then kept.
  const std::vector<bool> expected = {false, false, false, true, true, true, true, true, true, true, true, true};
  EXPECT_EQ(forms, expected);
}

TEST(RendezvousLearner, AFasterPriorIsKeptAndTheCheckCostsThreeMessages) {
  RendezvousLearner l(true, true);
  const auto forms = exchange(l, true, 12, kMiB, [](bool r, int) { return r ? 100.0 : 500.0; });
  const std::vector<bool> expected = {true, true, true, false, false, false, true, true, true, true, true, true};
  EXPECT_EQ(forms, expected);
}

TEST(RendezvousLearner, TheSwitchMessageAndTheColdOneDoNotCount) {
  // Messages 0 and 3 (cold, first after the switch) are slow whatever their form; the counted ones favour
  // rendezvous.
  RendezvousLearner l(true, false);
  const auto forms = exchange(l, false, 8, kMiB, [](bool r, int i) {
    if (i == 0 || i == 3) return 9000.0;
    return r ? 100.0 : 300.0;
  });
  EXPECT_TRUE(forms[7]);
}

// Runs of the other form: the index where each starts.
std::vector<int> checkStarts(const std::vector<bool>& forms, bool kept) {
  std::vector<int> starts;
  for (size_t i = 0; i < forms.size(); ++i) {
    if (forms[i] != kept && (i == 0 || forms[i - 1] == kept)) starts.push_back(static_cast<int>(i));
  }
  return starts;
}

TEST(RendezvousLearner, ChecksComeBackOnceTheRecheckTimeHasPassed) {
  // 100 us messages for 1.2 s: after the first check, one every kRecheckNs (200 ms: about 2000 messages), each
  // three messages of the other form.
  RendezvousLearner l(true, false);
  std::vector<int64_t> start;
  const auto forms = exchange(
      l, false, 12000, kMiB, [](bool r, int) { return r ? 500.0 : 100.0; }, 0, &start);
  const std::vector<int> checks = checkStarts(forms, false);
  ASSERT_GE(checks.size(), 5u);
  ASSERT_LE(checks.size(), 7u);
  EXPECT_EQ(checks[0], 3);
  for (size_t c = 0; c < checks.size(); ++c) {
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(forms[static_cast<size_t>(checks[c] + k)]) << "check " << c;
    EXPECT_FALSE(forms[static_cast<size_t>(checks[c] + 3)]) << "check " << c << " keeps staging";
    if (c == 0) continue;
    const int64_t gap = start[static_cast<size_t>(checks[c])] - start[static_cast<size_t>(checks[c - 1])];
    EXPECT_GE(gap, RendezvousLearner::kRecheckNs) << "check " << c;
    EXPECT_LE(gap, RendezvousLearner::kRecheckNs + 2'000'000) << "check " << c;
  }
}

TEST(RendezvousLearner, SlowMessagesStillWaitForTheRecheckMessageCount) {
  // 100 ms messages: the time passes after two, but a check waits for kRecheckMessages messages since the last.
  RendezvousLearner l(true, false);
  const auto forms = exchange(l, false, 80, kMiB, [](bool r, int) { return r ? 500e3 : 100e3; });
  const std::vector<int> checks = checkStarts(forms, false);
  ASSERT_GE(checks.size(), 2u);
  for (size_t c = 1; c < checks.size(); ++c) {
    EXPECT_GE(checks[c] - checks[c - 1], static_cast<int>(RendezvousLearner::kRecheckMessages)) << "check " << c;
  }
}

TEST(RendezvousLearner, TheVerdictFollowsAChangeOfPlacement) {
  // 10 ms messages; rendezvous pays for the first 100 messages, staging after (the host moved the CPUs).
  RendezvousLearner l(true, false);
  const auto forms = exchange(l, false, 200, kMiB, [](bool r, int i) {
    const bool rendezvousPays = i < 100;
    return r == rendezvousPays ? 10e3 : 50e3;
  });
  EXPECT_TRUE(forms[99]);
  // The first check after the change (within kRecheckNs, 20 messages here, plus the check's own three) finds
  // staging faster and keeps it; after that, rendezvous comes only as checks, three messages at a time.
  int run = 0;
  for (int i = 130; i < 200; ++i) {
    run = forms[static_cast<size_t>(i)] ? run + 1 : 0;
    EXPECT_LE(run, 3) << "message " << i;
  }
}

TEST(RendezvousLearner, ALateSenderStillConvergesAndItsLateMessagesDoNotCount) {
  // The sender sees the published word three messages late; the messages it sends in the old form during a check
  // (priced absurdly fast here) must not count for it.
  RendezvousLearner l(true, false);
  const auto forms = exchange(
      l, false, 30, kMiB, [](bool r, int i) { return r ? 100.0 : (i >= 3 ? 1.0 : 500.0); }, 3);
  EXPECT_TRUE(forms[29]);
}

TEST(RendezvousLearner, ASenderThatNeverFollowsEndsTheCheck) {
  RendezvousLearner l(true, false);
  for (int i = 0; i < 3; ++i) l.record(kMiB, false, 1e-4, i);
  EXPECT_TRUE(RendezvousLearner::wantsRendezvous(l.published(), kMiB, false)) << "the check asks for rendezvous";
  for (int i = 0; i < RendezvousLearner::kAbandonAfter + 1; ++i) l.record(kMiB, false, 1e-4, 3 + i);
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(l.published(), kMiB, false)) << "given up, back to staging";
}

TEST(RendezvousLearner, EachPowerOfTwoOfSizeLearnsOnItsOwn) {
  EXPECT_EQ(RendezvousLearner::bandOf(kRendezvousMinBytes), 0);
  EXPECT_EQ(RendezvousLearner::bandOf(2 * kRendezvousMinBytes - 1), 0);
  EXPECT_EQ(RendezvousLearner::bandOf(2 * kRendezvousMinBytes), 1);
  EXPECT_EQ(RendezvousLearner::bandOf(size_t{1} << 62), RendezvousLearner::kBands - 1);
  RendezvousLearner l(true, false);
  exchange(l, false, 12, kMiB, [](bool r, int) { return r ? 100.0 : 500.0; });
  EXPECT_TRUE(RendezvousLearner::wantsRendezvous(l.published(), kMiB + 5, false));
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(l.published(), 4 * kMiB, false));
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(l.published(), kMiB / 2, false));
  // Short messages (under the rendezvous size) are not the learner's.
  EXPECT_FALSE(l.record(kRendezvousMinBytes - 1, true, 1.0, 1));
}

// Below a ring slot a rendezvous' fixed cost outweighs staging's two copies where the CPUs share a cache: those bands
// start staged on every host, and only the learner moves them.
TEST(RendezvousLearner, MessagesUnderARingSlotStartStagedOnEveryHost) {
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(0, kRendezvousMinBytes, true));
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(0, kRingSlotBytes - 1, true));
  EXPECT_TRUE(RendezvousLearner::wantsRendezvous(0, kRingSlotBytes, true));
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(0, kRingSlotBytes, false));
  // Where rendezvous is faster, a small band learns it like any other.
  RendezvousLearner l(true, true);
  exchange(l, true, 12, kRendezvousMinBytes, [](bool r, int) { return r ? 100.0 : 500.0; });
  EXPECT_TRUE(RendezvousLearner::wantsRendezvous(l.published(), kRendezvousMinBytes, true));
}

}  // namespace
}  // namespace tern::shm
