// RendezvousLearner (src/transport/shm/rendezvous_learner.hpp): the prior until something is published, the first
// check and its uncounted switch message, the checks that keep following the faster form while the job runs, a
// sender that is late to follow or never follows, and the size bands. The end-to-end path (two processes, the forms
// actually sent) is in shm_rendezvous_test.cpp.
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
// (us for the message, by form and message index). Returns the forms sent (true: rendezvous).
std::vector<bool> exchange(RendezvousLearner& l, bool prior, int messages, size_t bytes,
                           const std::function<double(bool rendezvous, int index)>& us, int lag = 0) {
  std::deque<uint64_t> seen(static_cast<size_t>(lag) + 1, l.published());
  std::vector<bool> forms;
  for (int i = 0; i < messages; ++i) {
    const bool rendezvous = RendezvousLearner::wantsRendezvous(seen.front(), bytes, prior);
    forms.push_back(rendezvous);
    l.record(bytes, rendezvous, us(rendezvous, i) * 1e-6);
    seen.pop_front();
    seen.push_back(l.published());
  }
  return forms;
}

std::vector<int> indicesOf(const std::vector<bool>& forms, bool form) {
  std::vector<int> out;
  for (size_t i = 0; i < forms.size(); ++i) {
    if (forms[i] == form) out.push_back(static_cast<int>(i));
  }
  return out;
}

TEST(RendezvousLearner, TheSenderKeepsThePriorUntilTheReceiverPublishes) {
  EXPECT_TRUE(RendezvousLearner::wantsRendezvous(0, kMiB, true));
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(0, kMiB, false));
  RendezvousLearner off(false, false);
  EXPECT_FALSE(off.record(kMiB, false, 1e-3));
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

TEST(RendezvousLearner, ChecksComeBackAtDoublingIntervalsThenEveryRecheckInterval) {
  RendezvousLearner l(true, false);
  const int n = 4200;
  const auto forms = exchange(l, false, n, kMiB, [](bool r, int) { return r ? 500.0 : 100.0; });
  std::vector<int> expected;
  for (int start : {3, 32, 64, 128, 256, 512, 1024, 2048, 3072, 4096}) {
    for (int k = 0; k < 3; ++k) expected.push_back(start + k);
  }
  EXPECT_EQ(indicesOf(forms, true), expected);
}

TEST(RendezvousLearner, TheVerdictFollowsAChangeOfPlacement) {
  // Rendezvous pays for the first 100 messages, staging after (the host moved the CPUs).
  RendezvousLearner l(true, false);
  const auto forms = exchange(l, false, 200, kMiB, [](bool r, int i) {
    const bool rendezvousPays = i < 100;
    return r == rendezvousPays ? 100.0 : 500.0;
  });
  EXPECT_TRUE(forms[99]);
  // The check from message 128 finds staging faster again (its counted messages, 129 and 130, against 126 and 127)
  // and keeps it.
  EXPECT_TRUE(forms[127]);
  for (int i = 128; i < 200; ++i) EXPECT_FALSE(forms[static_cast<size_t>(i)]) << "message " << i;
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
  for (int i = 0; i < 3; ++i) l.record(kMiB, false, 1e-4);
  EXPECT_TRUE(RendezvousLearner::wantsRendezvous(l.published(), kMiB, false)) << "the check asks for rendezvous";
  for (int i = 0; i < RendezvousLearner::kAbandonAfter + 1; ++i) l.record(kMiB, false, 1e-4);
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(l.published(), kMiB, false)) << "given up, back to staging";
}

TEST(RendezvousLearner, EachPowerOfTwoOfSizeLearnsOnItsOwn) {
  EXPECT_EQ(RendezvousLearner::bandOf(kRingSlotBytes), 0);
  EXPECT_EQ(RendezvousLearner::bandOf(2 * kRingSlotBytes - 1), 0);
  EXPECT_EQ(RendezvousLearner::bandOf(2 * kRingSlotBytes), 1);
  EXPECT_EQ(RendezvousLearner::bandOf(size_t{1} << 62), RendezvousLearner::kBands - 1);
  RendezvousLearner l(true, false);
  exchange(l, false, 12, kMiB, [](bool r, int) { return r ? 100.0 : 500.0; });
  EXPECT_TRUE(RendezvousLearner::wantsRendezvous(l.published(), kMiB + 5, false));
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(l.published(), 4 * kMiB, false));
  EXPECT_FALSE(RendezvousLearner::wantsRendezvous(l.published(), kMiB / 2, false));
  // Short messages (under the rendezvous size) are not the learner's.
  EXPECT_FALSE(l.record(kRingSlotBytes - 1, true, 1.0));
}

}  // namespace
}  // namespace tern::shm
