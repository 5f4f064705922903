// How a one-pass all-to-all splits each block's copy between its sender and receiver (alltoall_balance.hpp): even
// exchanges stay all-read, uneven ones end with every rank copying about as much as the others, splits respect the
// alignment and the minimum, and every plan moves every byte exactly once.
#include "algorithms/shm/alltoall_balance.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace tern::shm {
namespace {

constexpr uint64_t kMin = kAlltoAllMinBalanceShift;
constexpr uint64_t kAlign = kAlltoAllBalanceAlign;

uint64_t maxOf(const std::vector<uint64_t>& v) { return *std::max_element(v.begin(), v.end()); }

// Recomputes every rank's load from the plan: own copy, the unpushed part of what it receives, what it pushes.
std::vector<uint64_t> loadsOf(int n, const std::vector<uint64_t>& bytes, const AlltoAllCopyPlan& plan) {
  const auto un = static_cast<size_t>(n);
  std::vector<uint64_t> load(un, 0);
  for (size_t p = 0; p < un; ++p) {
    for (size_t q = 0; q < un; ++q) {
      const uint64_t b = bytes[p * un + q], x = plan.pushed[p * un + q];
      EXPECT_LE(x, b);
      if (p == q) {
        EXPECT_EQ(x, 0u);
        load[p] += b;
        continue;
      }
      EXPECT_TRUE(x == b || x % kAlign == 0) << p << "->" << q << ": " << x;
      load[p] += x;
      load[q] += b - x;
    }
  }
  return load;
}

TEST(AlltoAllCopyPlan, AnEvenExchangeStaysAllRead) {
  for (int n : {1, 2, 3, 4, 8}) {
    const auto un = static_cast<size_t>(n);
    std::vector<uint64_t> bytes(un * un, 1 << 20);
    const AlltoAllCopyPlan plan = planAlltoAllCopies(n, bytes, {}, kMin, kAlign);
    EXPECT_EQ(std::accumulate(plan.pushed.begin(), plan.pushed.end(), uint64_t{0}), 0u) << n << " ranks";
    EXPECT_EQ(plan.load, loadsOf(n, bytes, plan));
  }
}

TEST(AlltoAllCopyPlan, TwoRanksWithAHotExpertShareTheCopying) {
  // The MoE split of perf/compare/collectives.hpp at 1 MiB per rank: rank 0 keeps 3/5 and receives 4/5 of rank 1's.
  const uint64_t mib = 1 << 20;
  std::vector<uint64_t> bytes = {mib * 3 / 5, mib * 2 / 5, mib * 4 / 5, mib / 5};
  const AlltoAllCopyPlan plan = planAlltoAllCopies(2, bytes, {}, kMin, kAlign);
  const std::vector<uint64_t> load = loadsOf(2, bytes, plan);
  EXPECT_EQ(plan.load, load);
  const uint64_t total = std::accumulate(bytes.begin(), bytes.end(), uint64_t{0});
  EXPECT_EQ(load[0] + load[1], total);
  // All-read, rank 0 would copy 7/5 MiB against rank 1's 3/5; balanced, each about half the total.
  EXPECT_LE(maxOf(load), total / 2 + kAlign);
  EXPECT_GT(plan.pushed[1 * 2 + 0], 0u);  // rank 1 writes part of its block into rank 0
}

TEST(AlltoAllCopyPlan, SmallImbalancesAreNotWorthASplit) {
  std::vector<uint64_t> bytes = {100000, 100000, 100000 + kMin, 100000};
  const AlltoAllCopyPlan plan = planAlltoAllCopies(2, bytes, {}, kMin, kAlign);
  EXPECT_EQ(plan.pushed, std::vector<uint64_t>(4, 0));  // half the difference is under the minimum
}

TEST(AlltoAllCopyPlan, FixedLoadsCountButNeverMove) {
  // Rank 0 already copies 2 MiB it cannot hand over (inline blocks); rank 1's block for it should go by push.
  const uint64_t mib = 1 << 20;
  std::vector<uint64_t> bytes = {0, 0, mib, 0};
  const AlltoAllCopyPlan plan = planAlltoAllCopies(2, bytes, {2 * mib, 0}, kMin, kAlign);
  EXPECT_EQ(plan.pushed[2], mib);
  EXPECT_EQ(plan.load, (std::vector<uint64_t>{2 * mib, mib}));
}

TEST(AlltoAllCopyPlan, RandomUnevenExchangesGetNoWorseAndConserveBytes) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8);
    const auto un = static_cast<size_t>(n);
    std::vector<uint64_t> bytes(un * un);
    for (auto& b : bytes) b = rng() % 4 == 0 ? 0 : rng() % (4 << 20);
    const AlltoAllCopyPlan plan = planAlltoAllCopies(n, bytes, {}, kMin, kAlign);
    const std::vector<uint64_t> load = loadsOf(n, bytes, plan);
    EXPECT_EQ(plan.load, load);
    std::vector<uint64_t> allRead(un, 0);
    for (size_t p = 0; p < un; ++p) {
      for (size_t q = 0; q < un; ++q) allRead[q] += bytes[p * un + q];
    }
    EXPECT_LE(maxOf(load), maxOf(allRead)) << "trial " << trial;
    EXPECT_EQ(std::accumulate(load.begin(), load.end(), uint64_t{0}),
              std::accumulate(bytes.begin(), bytes.end(), uint64_t{0}));
    // The same inputs give the same plan (every rank computes it for itself).
    EXPECT_EQ(plan.pushed, planAlltoAllCopies(n, bytes, {}, kMin, kAlign).pushed);
  }
}

}  // namespace
}  // namespace tern::shm
