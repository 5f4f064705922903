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

TEST(SpinBudget, AZeroPolicyNeverSpins) {
  SpinBudget b{SpinPolicy{}};
  b.succeeded();
  EXPECT_EQ(b.ns(), 0);
  b.failed();
  EXPECT_EQ(b.ns(), 0);
}

}  // namespace
}  // namespace tern
