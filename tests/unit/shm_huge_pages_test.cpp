// HugePageAdvisor (src/transport/shm/huge_page_advisor.*): which 2 MiB regions of a buffer it considers, that it
// collapses a region only once it has been in use for the pacing's minimum age and only once, that it spaces
// collapses out so that they take at most the pacing's share of the time (a short run pays nothing), that the
// kernel really backs the region with a huge page afterwards (read back from /proc/self/smaps), that the buffer's
// contents survive, and that TERN_SHM_HUGEPAGES=0 turns it off. Real memory and the real madvise(MADV_COLLAPSE):
// nothing is mocked.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "transport/shm/huge_page_advisor.hpp"

namespace tern::shm {
namespace {

constexpr size_t kRegion = HugePageAdvisor::kRegionBytes;

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using Memory = std::unique_ptr<char, FreeDeleter>;

// bytes of ordinary heap memory starting on a 2 MiB boundary, filled with a pattern.
Memory alignedBuffer(size_t bytes) {
  Memory m(static_cast<char*>(std::aligned_alloc(kRegion, bytes)));
  for (size_t i = 0; i < bytes; ++i) m.get()[i] = static_cast<char>(i * 7 + (i >> 12));
  return m;
}

bool patternIntact(const char* p, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) {
    if (p[i] != static_cast<char>(i * 7 + (i >> 12))) return false;
  }
  return true;
}

// AnonHugePages (KiB) of the mapping that contains p, from /proc/self/smaps; -1 when not found.
long anonHugeKiB(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = a >= lo && a < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

TEST(HugePageAdvisor, RegionsAreThoseTheBufferCoversAtLeastHalfOf) {
  const uintptr_t base = uintptr_t{64} * kRegion;  // never dereferenced
  auto at = [&](uintptr_t offset) { return reinterpret_cast<const void*>(base + offset); };
  EXPECT_EQ(HugePageAdvisor::regionsOf(at(0), 2 * kRegion), (std::vector<uintptr_t>{base, base + kRegion}));
  // A page past the boundary: the first region is covered but for one page, the last one only by a page.
  EXPECT_EQ(HugePageAdvisor::regionsOf(at(4096), 2 * kRegion), (std::vector<uintptr_t>{base, base + kRegion}));
  EXPECT_EQ(HugePageAdvisor::regionsOf(at(4096), kRegion), (std::vector<uintptr_t>{base}));
  // Exactly half of a region counts; a quarter of each of two regions does not.
  EXPECT_EQ(HugePageAdvisor::regionsOf(at(kRegion / 2), kRegion / 2), (std::vector<uintptr_t>{base}));
  EXPECT_TRUE(HugePageAdvisor::regionsOf(at(3 * kRegion / 4), kRegion / 2).empty());
  EXPECT_TRUE(HugePageAdvisor::regionsOf(at(0), kRegion / 2 - 1).empty());
  EXPECT_TRUE(HugePageAdvisor::regionsOf(nullptr, 4 * kRegion).empty());
  EXPECT_TRUE(HugePageAdvisor::regionsOf(reinterpret_cast<const void*>(UINTPTR_MAX - 4096), kRegion).empty());
}

// No minimum age, no pacing: every region is collapsed on the buffer's second use.
constexpr HugePageAdvisor::Pacing kAtOnce{std::chrono::nanoseconds(0), 1.0};

TEST(HugePageAdvisor, CollapsesOnTheSecondUseOnceAndKeepsTheContents) {
  const size_t bytes = 4 * kRegion;
  Memory m = alignedBuffer(bytes);
  HugePageAdvisor advisor(true, kAtOnce);
  EXPECT_EQ(advisor.onBuffer(m.get(), bytes), 0u) << "a buffer seen once is left alone";
  const size_t now = advisor.onBuffer(m.get(), bytes);
  if (now == 0 && advisor.failed() > 0) {
    GTEST_SKIP() << "this kernel refused MADV_COLLAPSE (before Linux 6.1, or transparent huge pages disabled): "
                 << advisor.failed() << " regions failed";
  }
  EXPECT_EQ(now, 4u);
  EXPECT_EQ(advisor.collapsed(), 4u);
  EXPECT_GE(anonHugeKiB(m.get()), 4 * 2048) << "the kernel backs the buffer with huge pages";
  EXPECT_TRUE(patternIntact(m.get(), bytes));
  EXPECT_EQ(advisor.onBuffer(m.get(), bytes), 0u) << "each region is collapsed once";
  // A smaller view of the same memory (a sweep over sizes) finds its regions done.
  EXPECT_EQ(advisor.onBuffer(m.get(), kRegion), 0u);
}

TEST(HugePageAdvisor, AShortRunPaysNothingAndCollapsesArePacedOnceTheBufferIsOld) {
  const size_t bytes = 4 * kRegion;
  Memory m = alignedBuffer(bytes);
  {
    HugePageAdvisor advisor(true);  // the library's pacing: a buffer must be in use for a second first
    for (int call = 0; call < 20; ++call) EXPECT_EQ(advisor.onBuffer(m.get(), bytes), 0u) << call;
    EXPECT_EQ(advisor.collapsed() + advisor.failed(), 0u) << "a run shorter than the minimum age collapses nothing";
  }
  // Old enough, but a collapse may take only 1% of the time: one region, then a pause of 99 times its duration.
  HugePageAdvisor advisor(true, {std::chrono::milliseconds(30), 0.01});
  EXPECT_EQ(advisor.onBuffer(m.get(), bytes), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  const size_t first = advisor.onBuffer(m.get(), bytes);
  if (first == 0 && advisor.failed() > 0) GTEST_SKIP() << "this kernel refused MADV_COLLAPSE";
  EXPECT_EQ(first, 1u) << "one region per pause";
  EXPECT_EQ(advisor.onBuffer(m.get(), bytes), 0u) << "the next waits for its pause";
  // Every region collapses in the end, one per pause (each pause is 99 collapses long: well under a second here).
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (advisor.collapsed() + advisor.failed() < 4 && std::chrono::steady_clock::now() < giveUp) {
    EXPECT_LE(advisor.onBuffer(m.get(), bytes), 1u);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(advisor.collapsed() + advisor.failed(), 4u);
  EXPECT_TRUE(patternIntact(m.get(), bytes));
}

TEST(HugePageAdvisor, DisabledAdvisorNeverTouchesMemory) {
  const size_t bytes = 2 * kRegion;
  Memory m = alignedBuffer(bytes);
  HugePageAdvisor advisor(false);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(advisor.onBuffer(m.get(), bytes), 0u);
  EXPECT_EQ(advisor.collapsed() + advisor.failed(), 0u);
  EXPECT_TRUE(patternIntact(m.get(), bytes));
}

TEST(HugePageAdvisor, EnvironmentSwitch) {
  const char* saved = std::getenv("TERN_SHM_HUGEPAGES");
  const std::string keep = saved != nullptr ? saved : "";
  unsetenv("TERN_SHM_HUGEPAGES");
  EXPECT_TRUE(HugePageAdvisor::enabledByEnvironment());
  setenv("TERN_SHM_HUGEPAGES", "0", 1);
  EXPECT_FALSE(HugePageAdvisor::enabledByEnvironment());
  setenv("TERN_SHM_HUGEPAGES", "1", 1);
  EXPECT_TRUE(HugePageAdvisor::enabledByEnvironment());
  if (saved != nullptr) {
    setenv("TERN_SHM_HUGEPAGES", keep.c_str(), 1);
  } else {
    unsetenv("TERN_SHM_HUGEPAGES");
  }
}

}  // namespace
}  // namespace tern::shm
