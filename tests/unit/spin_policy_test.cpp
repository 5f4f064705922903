// The busy-poll budget that the shared-memory waits and the TCP transport's progress share
// (transport/spin_policy.hpp): bounded by the policy, adapting to whether spinning paid.
#include "transport/spin_policy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace tern {
namespace {

TEST(SpinPolicy, MoreRanksThanCpusSpinLess) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const SpinPolicy fits = chooseSpinPolicy(1);
  const SpinPolicy crowded = chooseSpinPolicy(4 * cpus);
  EXPECT_GT(fits.maxSpinNs, 0);
  EXPECT_LE(fits.minSpinNs, fits.maxSpinNs);
  EXPECT_LT(crowded.maxSpinNs, fits.maxSpinNs);
  EXPECT_LE(crowded.minSpinNs, crowded.maxSpinNs);
  // Never long enough to matter against a deadline, whatever the machine.
  EXPECT_LE(fits.maxSpinNs, 1000 * 1000);
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

TEST(SpinBudget, AZeroPolicyNeverSpins) {
  SpinBudget b{SpinPolicy{}};
  b.succeeded();
  EXPECT_EQ(b.ns(), 0);
  b.failed();
  EXPECT_EQ(b.ns(), 0);
  b.sleptThrough(50000);
  EXPECT_EQ(b.ns(), 0);
}

}  // namespace
}  // namespace tern
