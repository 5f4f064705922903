// The busy-poll budget that the shared-memory waits and the TCP transport's progress share
// (transport/spin_policy.hpp): bounded by the policy, adapting to whether spinning paid.
#include "transport/spin_policy.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <initializer_list>
#include <thread>
#include <vector>

namespace tern {
namespace {

TEST(SpinPolicy, MoreRanksThanCpusSpinLess) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const SpinPolicy fits = spinPolicyFor(ranksOwnCpus(1));
  const SpinPolicy crowded = spinPolicyFor(ranksOwnCpus(4 * cpus));
  EXPECT_GT(fits.maxSpinNs, 0);
  EXPECT_LE(fits.minSpinNs, fits.maxSpinNs);
  EXPECT_LT(crowded.maxSpinNs, fits.maxSpinNs);
  EXPECT_LE(crowded.minSpinNs, crowded.maxSpinNs);
  // Never long enough to matter against a deadline, whatever the machine.
  EXPECT_LE(fits.maxSpinNs, 1000 * 1000);
}

CpuMask maskOf(std::initializer_list<int> cpus) {
  CpuMask m{};
  for (int c : cpus) m[c / 64] |= uint64_t{1} << (c % 64);
  return m;
}

TEST(SpinPolicy, TheRanksMasksTogetherSayWhetherEachRankHasACpu) {
  // Bound one per CPU by a launcher: each sees one CPU, together they have two.
  EXPECT_TRUE(ranksOwnCpus({maskOf({0}), maskOf({1})}));
  // A container confined to one CPU: both ranks see CPU 0, and share it.
  EXPECT_FALSE(ranksOwnCpus({maskOf({0}), maskOf({0})}));
  // Unbound on two CPUs: two ranks fit, three do not.
  EXPECT_TRUE(ranksOwnCpus({maskOf({0, 1}), maskOf({0, 1})}));
  EXPECT_FALSE(ranksOwnCpus({maskOf({0, 1}), maskOf({0, 1}), maskOf({0, 1})}));
  // Masks that differ: their union counts, whichever rank judges (the same masks in any order).
  EXPECT_TRUE(ranksOwnCpus({maskOf({0, 1}), maskOf({2}), maskOf({1, 2})}));
  EXPECT_TRUE(ranksOwnCpus({maskOf({2}), maskOf({1, 2}), maskOf({0, 1})}));
  // CPU numbers past the first word count too.
  EXPECT_TRUE(ranksOwnCpus({maskOf({70}), maskOf({1000})}));
  // A lone rank always owns its CPU.
  EXPECT_TRUE(ranksOwnCpus({maskOf({5})}));
}

TEST(SpinPolicy, AnUnreadableMaskCountsTheOnlineCpus) {
  const long online = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<CpuMask> fit(static_cast<size_t>(online), CpuMask{});
  EXPECT_TRUE(ranksOwnCpus(fit));
  fit.push_back(CpuMask{});
  EXPECT_FALSE(ranksOwnCpus(fit));
}

TEST(SpinPolicy, OwnMaskHoldsTheCpusThisThreadMayRunOn) {
  const CpuMask own = ownCpuMask();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  int bits = 0;
  for (uint64_t w : own) bits += std::popcount(w);
  EXPECT_EQ(bits, CPU_COUNT(&set));
}

TEST(SpinBudget, HalvesToItsFloorOnFailureAndGrowsBackToItsCeiling) {
  SpinPolicy p;
  p.maxSpinNs = 40000;
  p.minSpinNs = 5000;
  SpinBudget b(p);
  EXPECT_EQ(b.ns(), 40000);
  for (int i = 0; i < 20; ++i) b.failed();
  EXPECT_EQ(b.ns(), 5000);
  b.succeeded();
  EXPECT_GT(b.ns(), 5000);
  for (int i = 0; i < 20; ++i) b.succeeded();
  EXPECT_EQ(b.ns(), 40000);
}

TEST(SpinBudget, AWaitThatSleptSetsTheNextBudgetToCoverItOrHalvesItWhenTooLong) {
  SpinPolicy p;
  p.maxSpinNs = 1000000;
  p.minSpinNs = 10000;
  SpinBudget b(p);
  for (int i = 0; i < 20; ++i) b.failed();
  ASSERT_EQ(b.ns(), 10000);
  // A 150 us wait (spin included): the next spin covers it, with room to spare.
  b.sleptThrough(150000);
  EXPECT_GE(b.ns(), 150000);
  EXPECT_LE(b.ns(), p.maxSpinNs);
  // Never past the ceiling, even for a wait just within it.
  b.sleptThrough(p.maxSpinNs);
  EXPECT_EQ(b.ns(), p.maxSpinNs);
  // A wait longer than the ceiling (a peer that computes) halves it, towards the floor.
  b.sleptThrough(5 * p.maxSpinNs);
  EXPECT_EQ(b.ns(), p.maxSpinNs / 2);
  for (int i = 0; i < 20; ++i) b.sleptThrough(5 * p.maxSpinNs);
  EXPECT_EQ(b.ns(), p.minSpinNs);
  // A very short wait that still slept cannot take it below the floor.
  b.sleptThrough(100);
  EXPECT_EQ(b.ns(), p.minSpinNs);
}

TEST(SpinBudget, TheYieldPollShrinksThroughLongWaitsAndRecoversWhenItCoversThem) {
  SpinPolicy p = spinPolicyFor(false);
  ASSERT_GT(p.yieldPollNs, 0);
  SpinBudget b(p);
  EXPECT_EQ(b.yieldNs(), p.yieldPollNs);
  // Waits for a peer that is not runnable (it waits on a slow link, or computes) outlast the poll: halved, down to a
  // sixteenth, never to nothing (a later wait must still be able to show that yielding pays again).
  b.yieldSleptThrough(10 * p.yieldPollNs);
  EXPECT_EQ(b.yieldNs(), p.yieldPollNs / 2);
  for (int i = 0; i < 20; ++i) b.yieldFailed();
  EXPECT_EQ(b.yieldNs(), p.yieldPollNs / 16);
  // A wait that slept but ended within the policy's poll: the next poll covers it, with room to spare.
  b.yieldSleptThrough(p.yieldPollNs / 2);
  EXPECT_GE(b.yieldNs(), p.yieldPollNs / 2);
  EXPECT_LE(b.yieldNs(), p.yieldPollNs);
  // Polls that succeed double it back to the policy's, and no further.
  for (int i = 0; i < 20; ++i) b.yieldSucceeded();
  EXPECT_EQ(b.yieldNs(), p.yieldPollNs);
  // The spin budget is a separate one.
  EXPECT_EQ(b.ns(), p.maxSpinNs);
}

TEST(SpinBudget, AZeroPolicyNeverSpins) {
  SpinBudget b{SpinPolicy{}};
  b.succeeded();
  EXPECT_EQ(b.ns(), 0);
  b.failed();
  EXPECT_EQ(b.ns(), 0);
  b.sleptThrough(50000);
  EXPECT_EQ(b.ns(), 0);
  b.yieldSucceeded();
  b.yieldSleptThrough(100);
  EXPECT_EQ(b.yieldNs(), 0);
}

}  // namespace
}  // namespace tern
