// All-to-all and alltoallv over shared memory (src/algorithms/shm/direct_alltoall.cpp), with ranks as threads over
// TCP loopback (one host, so every call takes the shared-memory path) and, for CMA, as two processes.
//
// Every rank's output is compared bit for bit with blocks built by the independent reference
// (tests/common/reference.hpp: makeBuffer of values that every datatype holds exactly), and the bytes outside the
// received blocks must be untouched. Cases: 1..8 ranks, every datatype, 0, 1, 7, 1023 elements per peer (and
// 2^20 + 3 on 2 and 3 ranks), in and out of place, MoE-shaped uneven alltoallv splits with zero-length blocks and
// displacements out of peer order, with peers read in place and with everything staged. The run counters say which
// form ran; TERN_ALGO forces each entry by name in a child process (the knobs are read once per process), and a
// forced form that cannot run, or counts that disagree between ranks, fail on every rank naming why.
//
// Until DirectCollectives dispatches all-to-all (shm::kAlltoAllDispatched), the cases that need the shared-memory
// form skip; the results are checked either way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/shm/alltoall_balance.hpp"
#include "algorithms/shm/cma_learner.hpp"
#include "algorithms/shm/direct_collectives.hpp"
#include "algorithms/shm/shm_catalogue.hpp"
#include "common/reference.hpp"
#include "planner/cost_params.hpp"
#include "rank_threads.hpp"
#include "tern/tern_ext.h"
#include "test_child.hpp"
#include "transport/spin_policy.hpp"

namespace tern {
namespace {

using shm::ShmAlgorithm;
using shm::ZeroCopyMode;
using testing::runOnRanks;
using testing::Wire;

constexpr int kSkipExit = 77;
constexpr size_t kLarge = (size_t{1} << 20) + 3;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// Element i of the block sender sends to receiver: an integer every datatype holds exactly (bf16: up to 256).
double value(int sender, int receiver, size_t i, ternDataType_t t) {
  const uint64_t h = mix((static_cast<uint64_t>(sender) << 48) ^ (static_cast<uint64_t>(receiver) << 32) ^ i);
  const double v = static_cast<double>(h % 97);
  return ref::isSigned(t) ? v - 48 : v;
}

// One rank's side of an alltoallv (alltoall: equal counts, packed in peer order).
struct Layout {
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  size_t sendExtent = 0, recvExtent = 0;  // elements
};

// MoE-shaped splits: from sender s to receiver d, 0 (about a fifth of the pairs), or 1..5 units of `unit` elements,
// plus a ragged tail. Blocks are laid out in descending peer order with a 3-element gap between them.
size_t unevenCount(int s, int d, size_t unit) {
  const uint64_t h = mix(static_cast<uint64_t>(s) * 131 + static_cast<uint64_t>(d));
  if (h % 5 == 0) return 0;
  return unit * (1 + h % 5) + (h >> 8) % 3;
}

Layout layoutFor(int r, int n, bool uneven, size_t count) {
  Layout l;
  l.sendCounts.resize(n);
  l.sendDispls.resize(n);
  l.recvCounts.resize(n);
  l.recvDispls.resize(n);
  size_t s = 0, d = 0;
  for (int k = 0; k < n; ++k) {
    const int q = uneven ? n - 1 - k : k;
    l.sendCounts[q] = uneven ? unevenCount(r, q, count) : count;
    l.recvCounts[q] = uneven ? unevenCount(q, r, count) : count;
    l.sendDispls[q] = s;
    l.recvDispls[q] = d;
    s += l.sendCounts[q] + (uneven ? 3 : 0);
    d += l.recvCounts[q] + (uneven ? 3 : 0);
  }
  l.sendExtent = s;
  l.recvExtent = d;
  return l;
}

constexpr unsigned char kUntouched = 0x5a;

// Runs one alltoall (uneven: alltoallv) on this rank and checks its output against the reference blocks.
// registered: the input (out of place) is ternMemAlloc memory, which peers on the host map.
ternResult_t runAndCheck(ternComm_t comm, int r, int n, ternDataType_t t, size_t count, bool uneven, bool inPlace,
                         bool registered = false) {
  const size_t e = ref::elementSize(t);
  const Layout l = layoutFor(r, n, uneven, count);
  const size_t bufElems = std::max(l.sendExtent, l.recvExtent);
  std::vector<char> send(std::max<size_t>(1, l.sendExtent * e), static_cast<char>(kUntouched));
  for (int q = 0; q < n; ++q) {
    const std::vector<char> block = ref::makeBuffer(l.sendCounts[q], t, [&](size_t i) { return value(r, q, i, t); });
    if (!block.empty()) std::memcpy(send.data() + l.sendDispls[q] * e, block.data(), block.size());
  }
  std::vector<char> recv(std::max<size_t>(1, bufElems * e), static_cast<char>(kUntouched));
  char* out = recv.data();
  const char* in = send.data();
  if (inPlace) {
    std::memcpy(out, send.data(), l.sendExtent * e);
    in = out;
  }
  void* mem = nullptr;
  if (registered && !inPlace) {
    EXPECT_EQ(ternMemAlloc(&mem, send.size()), ternSuccess) << ternGetLastError(nullptr);
    if (mem == nullptr) return ternSystemError;
    std::memcpy(mem, send.data(), send.size());
    in = static_cast<const char*>(mem);
  }
  struct Free {
    void* p;
    ~Free() {
      if (p != nullptr) ternMemFree(p);
    }
  } freeMem{mem};
  ternResult_t res;
  if (uneven) {
    res = ternAlltoAllv(in, l.sendCounts.data(), l.sendDispls.data(), out, l.recvCounts.data(), l.recvDispls.data(), t,
                        comm);
  } else {
    res = ternAlltoAll(in, out, count, t, comm);
  }
  if (res != ternSuccess) return res;
  std::vector<char> want(recv.size(), static_cast<char>(kUntouched));
  if (inPlace) std::memcpy(want.data(), send.data(), l.sendExtent * e);  // gaps keep what the caller left there
  for (int p = 0; p < n; ++p) {
    const std::vector<char> block = ref::makeBuffer(l.recvCounts[p], t, [&](size_t i) { return value(p, r, i, t); });
    if (!block.empty()) std::memcpy(want.data() + l.recvDispls[p] * e, block.data(), block.size());
  }
  const bool same = std::memcmp(recv.data(), want.data(), recv.size()) == 0;
  EXPECT_TRUE(same) << (uneven ? "alltoallv" : "alltoall") << " rank " << r << " of " << n << " dtype " << t
                    << " count " << count << (inPlace ? " in place" : "") << " differs from the reference";
  return res;
}

const std::vector<ternDataType_t>& allTypes() {
  static const std::vector<ternDataType_t> types = [] {
    std::vector<ternDataType_t> v;
    for (int t = 0; t < ternNumTypes; ++t) v.push_back(static_cast<ternDataType_t>(t));
    return v;
  }();
  return types;
}

class ZeroCopy {
 public:
  explicit ZeroCopy(ZeroCopyMode m) { shm::setZeroCopyModeForTesting(m); }
  ~ZeroCopy() { shm::setZeroCopyModeForTesting(ZeroCopyMode::kAuto); }
};

uint64_t runs(ShmAlgorithm a) { return shm::runsForTesting(a); }

// ---------------------------------------------------------------------------------------------------------------

TEST(ShmAlltoAll, EveryRankCountDtypeAndLayoutMatchesTheReference) {
  shm::countRunsForTesting(true);
  for (ZeroCopyMode mode : {ZeroCopyMode::kAuto, ZeroCopyMode::kStagedOnly}) {
    ZeroCopy zc(mode);
    for (int n = 1; n <= 8; ++n) {
      runOnRanks(n, Wire::kTcp, [&](ternComm_t comm, int r) {
        for (ternDataType_t t : allTypes()) {
          for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}}) {
            for (bool uneven : {false, true}) {
              for (bool inPlace : {false, true}) {
                ASSERT_EQ(runAndCheck(comm, r, n, t, count, uneven, inPlace), ternSuccess) << ternGetLastError(comm);
              }
            }
          }
        }
      });
    }
  }
  shm::countRunsForTesting(false);
}

TEST(ShmAlltoAll, LargeBlocksMatchTheReference) {
  shm::countRunsForTesting(true);
  for (ZeroCopyMode mode : {ZeroCopyMode::kAuto, ZeroCopyMode::kStagedOnly}) {
    ZeroCopy zc(mode);
    for (int n : {2, 3}) {
      const uint64_t mapped = runs(ShmAlgorithm::kMapped), staged = runs(ShmAlgorithm::kPipelined);
      const uint64_t pushes = shm::alltoallPushesForTesting();
      runOnRanks(n, Wire::kTcp, [&](ternComm_t comm, int r) {
        for (ternDataType_t t : {ternUint8, ternBfloat16, ternFloat32, ternFloat64}) {
          for (bool inPlace : {false, true}) {
            ASSERT_EQ(runAndCheck(comm, r, n, t, kLarge, false, inPlace), ternSuccess) << ternGetLastError(comm);
          }
        }
        // MoE: blocks of 0 to ~5 x 100000 elements, so some ranks send inline and others not.
        for (bool inPlace : {false, true}) {
          ASSERT_EQ(runAndCheck(comm, r, n, ternFloat32, 100000, true, inPlace), ternSuccess) << ternGetLastError(comm);
        }
      });
      if (shm::kAlltoAllDispatched) {
        // Blocks this large do not fit a staging slot: read in place between threads, or staged in rounds.
        const ShmAlgorithm expect = mode == ZeroCopyMode::kAuto ? ShmAlgorithm::kMapped : ShmAlgorithm::kPipelined;
        EXPECT_GE(runs(expect) - (expect == ShmAlgorithm::kMapped ? mapped : staged), 8u * n)
            << "ranks " << n << " ran " << shm::shmAlgorithmName(expect) << " too rarely";
        // The uneven splits leave some ranks far more to copy: in one pass, senders wrote part of their blocks.
        if (expect == ShmAlgorithm::kMapped) {
          EXPECT_GT(shm::alltoallPushesForTesting(), pushes) << "ranks " << n;
        }
      }
    }
  }
  shm::countRunsForTesting(false);
}

TEST(ShmAlltoAll, SmallBlocksRunInlineInOnePass) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  shm::countRunsForTesting(true);
  const uint64_t before = runs(ShmAlgorithm::kSmall);
  runOnRanks(3, Wire::kTcp, [&](ternComm_t comm, int r) {
    char name[64] = "";
    double us = -1;
    ASSERT_EQ(ternQueryAlgorithm(comm, "alltoall", 1023, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_small");
    EXPECT_GT(us, 0);
    ASSERT_EQ(ternQueryAlgorithm(comm, "alltoall", kLarge, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_mapped");  // threads of one process read each other in place
    for (int i = 0; i < 4; ++i) ASSERT_EQ(runAndCheck(comm, r, 3, ternFloat32, 1023, false, false), ternSuccess);
  });
  EXPECT_EQ(runs(ShmAlgorithm::kSmall) - before, 12u);
  shm::countRunsForTesting(false);
}

TEST(ShmAlltoAll, CountsThatDisagreeFailOnEveryRank) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  runOnRanks(3, Wire::kTcp, [&](ternComm_t comm, int r) {
    std::vector<size_t> sc(3, 4), sd = {0, 4, 8}, rc(3, 4), rd = {0, 4, 8};
    if (r == 1) rc[2] = 5;  // rank 2 sends 4 elements to rank 1, which expects 5
    std::vector<float> in(12, 1.0f), out(16, 0.0f);
    EXPECT_EQ(ternAlltoAllv(in.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(), ternFloat32, comm),
              ternInvalidUsage);
    EXPECT_NE(std::strstr(ternGetLastError(comm), "rank 2 sends 16 bytes to rank 1, which expects 20"), nullptr)
        << "rank " << r << ": " << ternGetLastError(comm);
  });
}

// The one-phase alltoall decides from what every rank agrees on: ranks in place and out of place in one call meet.
TEST(ShmAlltoAll, InPlaceAndOutOfPlaceRanksMeetInOneCall) {
  runOnRanks(3, Wire::kTcp, [&](ternComm_t comm, int r) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{3000}, size_t{30000}}) {
      ASSERT_EQ(runAndCheck(comm, r, 3, ternFloat32, count, false, r == 1), ternSuccess)
          << "count " << count << ": " << ternGetLastError(comm);
    }
  });
}

TEST(ShmAlltoAll, CountsThatDisagreeInOnePhaseFailOnEveryRank) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  runOnRanks(2, Wire::kTcp, [&](ternComm_t comm, int r) {
    const size_t count = r == 0 ? 7 : 8;
    std::vector<float> in(16, 1.0f), out(16, 0.0f);
    EXPECT_EQ(ternAlltoAll(in.data(), out.data(), count, ternFloat32, comm), ternInvalidUsage);
    EXPECT_NE(std::strstr(ternGetLastError(comm), r == 0 ? "count 7 vs 8" : "count 8 vs 7"), nullptr)
        << "rank " << r << ": " << ternGetLastError(comm);
  });
}

TEST(ShmAlltoAll, CatalogueEntriesArePricedByTheOneModel) {
  if (!shm::kAlltoAllDispatched) {
    EXPECT_EQ(findEntry(Collective::kAlltoAll, "shm_cma"), nullptr);
    GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  }
  const planner::CostParams params;
  for (Collective c : {Collective::kAlltoAll, Collective::kAlltoAllv}) {
    for (const char* name : {"shm_small", "shm_pipelined", "shm_cma", "shm_mapped"}) {
      const AlgorithmInfo* a = findEntry(c, name);
      ASSERT_NE(a, nullptr) << collectiveName(c) << " " << name;
      EXPECT_EQ(a->family, AlgorithmFamily::kSharedMemory);
      CollArgs args;
      args.coll = c;
      args.count = 1024;
      if (c == Collective::kAlltoAllv) {
        args.sendCounts = args.recvCounts = {1024, 0, 2048, 1};
        args.sendDispls = args.recvDispls = {0, 1024, 1024, 3072};
      }
      std::string why;
      ASSERT_TRUE(a->applies(args, 4, &why)) << name << ": " << why;
      EXPECT_GT(a->cost(args, 4, params.shmAlgorithms), 0) << name;
    }
  }
  // The default: inline while a rank's blocks for its peers fit a staging slot, then the one-pass forms; alltoallv
  // takes one entry on every rank whatever its own sizes.
  CollArgs small;
  small.coll = Collective::kAlltoAll;
  small.count = 1024;
  EXPECT_EQ(shm::defaultShmAlgorithm(small, 4), ShmAlgorithm::kSmall);
  CollArgs large = small;
  large.count = kLarge;
  EXPECT_EQ(shm::defaultShmAlgorithm(large, 4), ShmAlgorithm::kPipelined);
  std::string why;
  EXPECT_FALSE(shm::shmSmallApplies(large, 4, &why));
  EXPECT_NE(why.find("staging slot"), std::string::npos) << why;
  EXPECT_LT(shm::shmSeconds(ShmAlgorithm::kSmall, small, 4, params.shmAlgorithms),
            shm::shmSeconds(ShmAlgorithm::kCma, small, 4, params.shmAlgorithms));
}

// ---------------------------------------------------------------------------------------------------------------
// TERN_ALGO: each entry forced in a child process.

bool inChild() { return std::getenv("SHM_ALLTOALL_TEST_CHILD") != nullptr; }

pid_t spawnChild(const std::string& test, const std::vector<std::string>& extraEnv) {
  return testing::spawnTestChild("ShmAlltoAllChild." + test, "SHM_ALLTOALL_TEST_CHILD", extraEnv);
}

int waitChild(pid_t pid) { return testing::waitTestChild(pid); }

// Counts the forced form must run at: small ones, and for the others blocks beyond a staging slot.
std::vector<size_t> forcedCounts(ShmAlgorithm a) {
  if (a == ShmAlgorithm::kSmall) return {7, 30000};
  return {7, 70000};
}

// Blocks rank `rank` writes into its peers in one uneven one-pass float32 call of `unit`-element units: blocks that
// large go inline only from a rank that sends its peers nothing, and in place such a rank takes no writes either.
uint64_t expectedPushes(int rank, int n, size_t unit, bool inPlace) {
  const auto un = static_cast<size_t>(n);
  std::vector<uint64_t> bytes(un * un), fixed(un, 0);
  for (int p = 0; p < n; ++p) {
    for (int q = 0; q < n; ++q) bytes[p * un + q] = unevenCount(p, q, unit) * sizeof(float);
  }
  for (size_t q = 0; q < un; ++q) {
    bool sendsPeers = false;
    for (size_t d = 0; d < un; ++d) sendsPeers = sendsPeers || (d != q && bytes[q * un + d] > 0);
    if (sendsPeers || !inPlace) continue;
    for (size_t p = 0; p < un; ++p) {
      if (p == q) continue;
      fixed[q] += bytes[p * un + q];
      bytes[p * un + q] = 0;
    }
  }
  const shm::AlltoAllCopyPlan plan =
      shm::planAlltoAllCopies(n, bytes, fixed, shm::kAlltoAllMinBalanceShift, shm::kAlltoAllBalanceAlign);
  uint64_t pushes = 0;
  for (int q = 0; q < n; ++q) pushes += plan.pushed[static_cast<size_t>(rank) * un + q] > 0 ? 1 : 0;
  return pushes;
}

// Runs alltoall and alltoallv at the forced form's counts; returns the calls made.
uint64_t runForced(ternComm_t comm, int r, int n, ShmAlgorithm forced) {
  uint64_t calls = 0;
  for (size_t count : forcedCounts(forced)) {
    char name[64] = "";
    double us = -1;
    EXPECT_EQ(ternQueryAlgorithm(comm, "alltoall", count, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, shm::shmAlgorithmName(forced)) << "count " << count;
    for (bool uneven : {false, true}) {
      for (bool inPlace : {false, true}) {
        // Forced inline, the uneven splits must fit a slot too: units of a tenth.
        const size_t c = uneven && forced == ShmAlgorithm::kSmall ? count / 10 : count;
        EXPECT_EQ(runAndCheck(comm, r, n, ternFloat32, c, uneven, inPlace), ternSuccess) << ternGetLastError(comm);
        ++calls;
      }
    }
  }
  return calls;
}

void expectOnly(ShmAlgorithm forced, uint64_t calls) {
  for (ShmAlgorithm a : {ShmAlgorithm::kSmall, ShmAlgorithm::kPipelined, ShmAlgorithm::kCma, ShmAlgorithm::kMapped}) {
    EXPECT_EQ(runs(a), a == forced ? calls : 0) << shm::shmAlgorithmName(a) << " with " << std::getenv("TERN_ALGO");
  }
}

TEST(ShmAlltoAllChild, DISABLED_ThreadRanksRunTheForcedForm) {
  ASSERT_TRUE(inChild());
  const ShmAlgorithm forced = shm::shmAlgorithmNamed(std::getenv("SHM_ALLTOALL_TEST_FORCED"));
  shm::countRunsForTesting(true);
  uint64_t calls = 0;
  runOnRanks(2, Wire::kTcp, [&](ternComm_t comm, int r) {
    const uint64_t c = runForced(comm, r, 2, forced);
    if (r == 0) calls = c;
  });
  expectOnly(forced, 2 * calls);
}

TEST(ShmAlltoAllChild, DISABLED_ProcessRankRunsTheForcedForm) {
  ASSERT_TRUE(inChild());
  const char* forcedName = std::getenv("SHM_ALLTOALL_TEST_FORCED");
  const ShmAlgorithm forced = shm::shmAlgorithmNamed(forcedName != nullptr ? forcedName : "");
  const int rank = std::atoi(std::getenv("SHM_ALLTOALL_TEST_RANK"));
  ternUniqueId id;
  const std::string hex = std::getenv("SHM_ALLTOALL_TEST_ID");
  ASSERT_TRUE(testing::uniqueIdFromHex(hex, &id)) << hex;
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 30000;
  ternComm_t comm = nullptr;
  ASSERT_EQ(ternCommInitRankConfig(&comm, 2, id, rank, &config), ternSuccess) << ternGetLastError(nullptr);
  shm::countRunsForTesting(true);
  if (const char* expect = std::getenv("SHM_ALLTOALL_TEST_CACHE_PRIOR")) {
    // The ranks were told different things about their cache (TERN_SHM_SHARED_CACHE) and kernel copies are slow:
    // both take the lowest rank's answer (mesh.cpp). Blocks of 1 MiB per rank and up start staged with a shared
    // cache, on CMA without one out of place, and staged in place everywhere (cma_learner.hpp).
    if (!ranksOwnCpus(2)) {
      std::fprintf(stderr, "the ranks share CPUs here: the setup does not probe the cache\n");
      ternCommDestroy(comm);
      std::_Exit(kSkipExit);
    }
    // What this rank expects to run, from its own learner: a rank that kept its own answer would expect staging
    // where its peer expects CMA, and the peer's count below fails.
    char name[32] = {};
    double us = 0;
    ASSERT_EQ(ternQueryAlgorithm(comm, "alltoall", kLarge, ternFloat32, name, sizeof(name), &us), ternSuccess);
    const bool shared = std::string(expect) == "shared";
    if (!shared && std::string(name) != "shm_cma") {
      std::fprintf(stderr, "CMA unavailable between the ranks (%s expected)\n", name);
      ternCommDestroy(comm);
      std::_Exit(kSkipExit);
    }
    for (const bool inPlace : {false, true}) {
      ASSERT_EQ(runAndCheck(comm, rank, 2, ternFloat32, kLarge, false, inPlace), ternSuccess) << ternGetLastError(comm);
    }
    EXPECT_EQ(runs(ShmAlgorithm::kCma), shared ? 0u : 1u);
    EXPECT_EQ(runs(ShmAlgorithm::kPipelined), shared ? 2u : 1u);
    ternCommDestroy(comm);
    return;
  }
  if (std::getenv("SHM_ALLTOALL_TEST_REGISTERED") != nullptr) {
    // Every rank's input from ternMemAlloc: peers map it and copy their blocks out in one plain copy, whatever the
    // kernel's copies cost here (the ranks are told they are slow) and at every size beyond the inline one, alltoall
    // and MoE-shaped alltoallv alike.
    uint64_t calls = 0;
    for (const size_t count : {size_t{70000}, kLarge}) {
      for (const bool uneven : {false, true}) {
        ASSERT_EQ(runAndCheck(comm, rank, 2, ternFloat32, count, uneven, false, true), ternSuccess)
            << ternGetLastError(comm);
        ++calls;
      }
    }
    EXPECT_EQ(runs(ShmAlgorithm::kMapped), calls);
    EXPECT_EQ(runs(ShmAlgorithm::kCma) + runs(ShmAlgorithm::kPipelined), 0u);
    // One rank's input ordinary: nobody can map every input, and the call takes the slow-kernel-copy prior's form on
    // both: CMA for these blocks where the ranks own their CPUs and the host lets them read each other, else
    // staging (cma_learner.hpp), as the query says beforehand.
    char name[32] = {};
    double us = 0;
    ASSERT_EQ(ternQueryAlgorithm(comm, "alltoall", 70000, ternFloat32, name, sizeof(name), &us), ternSuccess);
    const bool cma = std::string(name) == "shm_cma";
    if (!ranksOwnCpus(2)) {
      EXPECT_FALSE(cma) << name;
    }
    ASSERT_EQ(runAndCheck(comm, rank, 2, ternFloat32, 70000, false, false, rank == 0), ternSuccess)
        << ternGetLastError(comm);
    EXPECT_EQ(runs(ShmAlgorithm::kCma), cma ? 1u : 0u) << name;
    EXPECT_EQ(runs(ShmAlgorithm::kPipelined), cma ? 0u : 1u) << name;
    ternCommDestroy(comm);
    return;
  }
  if (const char* mixed = std::getenv("SHM_ALLTOALL_TEST_INLINE_PAST_LIMIT")) {
    // Out of place, blocks past the inline limit that fit a slot: a rank that takes no one-pass form sends them
    // inline, one that offers CMA stages them in rounds, and the two kinds meet in one call ("mixed"). Where both
    // decline CMA ("both"), the whole call is inline; but where the ranks outnumber the CPUs, every block past the
    // limit is staged in rounds.
    constexpr size_t kCount = 20000;  // floats per block: 80 KB for the one peer, past 16 KB and within the slot
    ASSERT_GT(kCount * sizeof(float), shm::shmAlltoAllInlineLimit(CollArgs{Collective::kAlltoAll, kCount}, 2));
    ASSERT_LE(kCount * sizeof(float), shm::alltoallInlineCapacity(2));
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(runAndCheck(comm, rank, 2, ternFloat32, kCount, false, false), ternSuccess) << ternGetLastError(comm);
    }
    const bool both = std::string(mixed) == "both" && ranksOwnCpus(2);
    EXPECT_EQ(runs(ShmAlgorithm::kSmall), both ? 3u : 0u);
    EXPECT_EQ(runs(ShmAlgorithm::kPipelined), both ? 0u : 3u);
    EXPECT_EQ(runs(ShmAlgorithm::kCma), 0u);
    ternCommDestroy(comm);
    return;
  }
  if (std::getenv("SHM_ALLTOALL_TEST_BANDS") != nullptr) {
    // Alltoallv whose ranks send amounts of different size bands, big and small in turn: every call's mean input per
    // rank is the same, so the learner's trial runs over these calls in one band, alike on both ranks (CMA, CMA,
    // staged x3, CMA, CMA), although each rank's own input alternates between two bands.
    constexpr size_t kBig = size_t{1} << 18, kSmall = size_t{1} << 14;  // floats per block
    std::vector<bool> ranCma;
    for (int i = 0; i < shm::CmaLearner::kQuickTrialCalls; ++i) {
      const bool bigSender = (i % 2 == 0) == (rank == 0);
      const size_t mine = bigSender ? kBig : kSmall, theirs = bigSender ? kSmall : kBig;
      const std::vector<size_t> sendCounts = {mine, mine}, sendDispls = {0, mine};
      std::vector<size_t> recvCounts = {rank == 0 ? mine : theirs, rank == 0 ? theirs : mine};
      const std::vector<size_t> recvDispls = {0, recvCounts[0]};
      std::vector<float> in(2 * mine), out(recvCounts[0] + recvCounts[1], -1.0f);
      for (int q = 0; q < 2; ++q) {
        for (size_t k = 0; k < mine; ++k) in[sendDispls[q] + k] = static_cast<float>(value(rank, q, k, ternFloat32));
      }
      const uint64_t before = runs(ShmAlgorithm::kCma);
      ASSERT_EQ(ternAlltoAllv(in.data(), sendCounts.data(), sendDispls.data(), out.data(), recvCounts.data(),
                              recvDispls.data(), ternFloat32, comm),
                ternSuccess)
          << ternGetLastError(comm);
      ranCma.push_back(runs(ShmAlgorithm::kCma) > before);
      for (int p = 0; p < 2; ++p) {
        for (size_t k = 0; k < recvCounts[p]; ++k) {
          ASSERT_EQ(out[recvDispls[p] + k], static_cast<float>(value(p, rank, k, ternFloat32)))
              << "call " << i << " from rank " << p << " element " << k;
        }
      }
    }
    ternCommDestroy(comm);
    if (std::none_of(ranCma.begin(), ranCma.end(), [](bool b) { return b; })) {
      std::fprintf(stderr, "CMA unavailable between the ranks: the staged form ran\n");
      std::_Exit(kSkipExit);
    }
    EXPECT_EQ(ranCma, (std::vector<bool>{true, true, false, false, false, true, true}));
    return;
  }
  if (forced == ShmAlgorithm::kNone) {
    // The default between processes: inline for small blocks, CMA beyond a slot where the host allows it.
    ASSERT_EQ(runAndCheck(comm, rank, 2, ternFloat32, 1023, false, false), ternSuccess) << ternGetLastError(comm);
    EXPECT_EQ(runs(ShmAlgorithm::kSmall), 1u);
    const uint64_t pushes = shm::alltoallPushesForTesting();
    for (bool inPlace : {false, true}) {
      ASSERT_EQ(runAndCheck(comm, rank, 2, ternFloat32, kLarge, false, inPlace), ternSuccess) << ternGetLastError(comm);
      ASSERT_EQ(runAndCheck(comm, rank, 2, ternFloat32, 100000, true, inPlace), ternSuccess) << ternGetLastError(comm);
    }
    // Where the split leaves this rank less to copy than its peer, it wrote part of its block into the peer (blocks
    // of 100000-element units never go inline unless empty, so the plan is the one the library computed).
    if (runs(ShmAlgorithm::kCma) > 0) {
      EXPECT_EQ(shm::alltoallPushesForTesting() - pushes,
                expectedPushes(rank, 2, 100000, false) + expectedPushes(rank, 2, 100000, true));
    }
    if (std::getenv("SHM_ALLTOALL_TEST_EXPECT_PRIOR") != nullptr) {
      // A rank of the host reported slow kernel copies at setup: every rank starts from that prior, none runs a CMA
      // trial (whose third to fifth calls would be staged). For these blocks (64 KiB per rank and more) the prior is
      // CMA out of place where the ranks own their CPUs, else staging with an early check from the band's third call
      // (cma_learner.hpp), which these two calls per band do not reach; in place it is staging everywhere. Three more
      // alltoallv calls: where the prior is CMA, the trial would stage them; where it is staging, the early check
      // runs them by CMA.
      for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(runAndCheck(comm, rank, 2, ternFloat32, 100000, true, false), ternSuccess) << ternGetLastError(comm);
      }
      if (runs(ShmAlgorithm::kCma) == 0) {
        std::fprintf(stderr, "CMA unavailable between the ranks: the staged form ran\n");
        ternCommDestroy(comm);
        std::_Exit(kSkipExit);
      }
      const bool cma = ranksOwnCpus(2);
      EXPECT_EQ(runs(ShmAlgorithm::kCma), cma ? 5u : 3u);
      EXPECT_EQ(runs(ShmAlgorithm::kPipelined), cma ? 2u : 4u);
      ternCommDestroy(comm);
      return;
    }
    if (runs(ShmAlgorithm::kCma) == 0) {
      EXPECT_EQ(runs(ShmAlgorithm::kPipelined), 4u);
      std::fprintf(stderr, "CMA unavailable between the ranks: the staged form ran\n");
      ternCommDestroy(comm);
      std::_Exit(kSkipExit);
    }
    EXPECT_EQ(runs(ShmAlgorithm::kCma), 4u);
    ternCommDestroy(comm);
    return;
  }
  std::vector<float> probe(2 * 70000, 1.0f), out(2 * 70000);
  if (ternAlltoAll(probe.data(), out.data(), 70000, ternFloat32, comm) == ternInvalidUsage &&
      std::strstr(ternGetLastError(comm), "TERN_ALGO=shm_cma cannot run") != nullptr) {
    std::fprintf(stderr, "CMA unavailable between the ranks: %s\n", ternGetLastError(comm));
    ternCommDestroy(comm);
    std::_Exit(kSkipExit);
  }
  const uint64_t calls = runForced(comm, rank, 2, forced);
  expectOnly(forced, calls + 1);
  ternCommDestroy(comm);
}

TEST(ShmAlltoAllChild, DISABLED_ForcedFormThatCannotRunFails) {
  ASSERT_TRUE(inChild());
  const std::string expect = std::getenv("SHM_ALLTOALL_TEST_EXPECT");
  const size_t count = std::strtoull(std::getenv("SHM_ALLTOALL_TEST_COUNT"), nullptr, 10);
  const bool uneven = std::getenv("SHM_ALLTOALL_TEST_UNEVEN") != nullptr;
  if (std::getenv("SHM_ALLTOALL_TEST_STAGED") != nullptr) shm::setZeroCopyModeForTesting(ZeroCopyMode::kStagedOnly);
  runOnRanks(2, Wire::kTcp, [&](ternComm_t comm, int r) {
    EXPECT_EQ(runAndCheck(comm, r, 2, ternFloat32, count, uneven, false), ternInvalidUsage);
    EXPECT_NE(std::strstr(ternGetLastError(comm), expect.c_str()), nullptr)
        << "rank " << r << ": " << ternGetLastError(comm);
  });
}

TEST(ShmAlltoAll, ThreadRanksRunEachForcedForm) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  for (const char* name : {"shm_small", "shm_pipelined", "shm_mapped"}) {
    const std::string algo = std::string("alltoall:") + name + ";alltoallv:" + name;
    EXPECT_EQ(waitChild(spawnChild("DISABLED_ThreadRanksRunTheForcedForm",
                                   {"TERN_ALGO=" + algo, std::string("SHM_ALLTOALL_TEST_FORCED=") + name})),
              0)
        << name;
  }
}

// perRank: extra variables for rank 0 and rank 1.
std::vector<int> runProcessPair(const std::vector<std::string>& env,
                                const std::vector<std::vector<std::string>>& perRank = {{}, {}}) {
  ternUniqueId id;
  EXPECT_EQ(ternGetUniqueId(&id), ternSuccess);
  const std::string hex = testing::uniqueIdToHex(id);
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> e = env;
    e.insert(e.end(), perRank[r].begin(), perRank[r].end());
    e.push_back("SHM_ALLTOALL_TEST_RANK=" + std::to_string(r));
    e.push_back("SHM_ALLTOALL_TEST_ID=" + hex);
    pids.push_back(spawnChild("DISABLED_ProcessRankRunsTheForcedForm", e));
  }
  std::vector<int> codes;
  for (pid_t p : pids) codes.push_back(waitChild(p));
  return codes;
}

TEST(ShmAlltoAll, ProcessRanksReadByCma) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  for (const bool forced : {false, true}) {
    // The default form where CMA is taken: not left to what the learner finds on this host.
    std::vector<std::string> env = {"TERN_SHM_CMA_LEARN=0"};
    if (forced) env = {"TERN_ALGO=alltoall:shm_cma;alltoallv:shm_cma", "SHM_ALLTOALL_TEST_FORCED=shm_cma"};
    const std::vector<int> codes = runProcessPair(env);
    if (codes[0] == kSkipExit && codes[1] == kSkipExit) GTEST_SKIP() << "CMA between processes refused on this host";
    EXPECT_EQ(codes[0], 0) << (forced ? "forced" : "default");
    EXPECT_EQ(codes[1], 0) << (forced ? "forced" : "default");
  }
}

TEST(ShmAlltoAll, ProcessRanksMapRegisteredInputsAndCopyOnce) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  const std::vector<int> codes = runProcessPair({"SHM_ALLTOALL_TEST_REGISTERED=1", "TERN_SHM_KERNEL_COPY_RATIO=0.1"});
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
}

TEST(ShmAlltoAll, AlltoallvLearnsByTheMeanSizeAlikeOnRanksWhoseOwnSizesDiffer) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  // No prior from the kernel copy probe: the band's first calls are the trial.
  const std::vector<int> codes = runProcessPair({"SHM_ALLTOALL_TEST_BANDS=1", "TERN_SHM_KERNEL_COPY_RATIO=1"});
  if (codes[0] == kSkipExit && codes[1] == kSkipExit) GTEST_SKIP() << "CMA between processes refused on this host";
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
}

TEST(ShmAlltoAll, BlocksPastTheInlineLimitGoInlineFromRanksThatDeclineCma) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  const std::string noCma = "TERN_ALGO=alltoall:^shm_cma";
  std::vector<int> codes =
      runProcessPair({"SHM_ALLTOALL_TEST_INLINE_PAST_LIMIT=mixed"}, {{noCma}, {"TERN_SHM_CMA_LEARN=0"}});
  EXPECT_EQ(codes[0], 0) << "mixed";
  EXPECT_EQ(codes[1], 0) << "mixed";
  codes = runProcessPair({"SHM_ALLTOALL_TEST_INLINE_PAST_LIMIT=both", noCma});
  EXPECT_EQ(codes[0], 0) << "both";
  EXPECT_EQ(codes[1], 0) << "both";
}

TEST(ShmAlltoAll, OneRankWithSlowKernelCopiesGivesEveryRankItsPrior) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  // Rank 0 reports slow kernel copies, rank 1 fast ones: the setup handshake makes both start from the same prior.
  // Whatever the placement: a shared cache starts in-place all-to-alls staged (cma_learner.hpp).
  const std::vector<int> codes = runProcessPair({"SHM_ALLTOALL_TEST_EXPECT_PRIOR=1", "TERN_SHM_SHARED_CACHE=0"},
                                                {{"TERN_SHM_KERNEL_COPY_RATIO=0.1"}, {"TERN_SHM_KERNEL_COPY_RATIO=1"}});
  if (codes[0] == kSkipExit && codes[1] == kSkipExit) GTEST_SKIP() << "CMA between processes refused on this host";
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
}

TEST(ShmAlltoAll, EveryRankTakesTheLowestRanksAnswerOnCacheSharing) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  for (const bool shared : {true, false}) {
    const std::string lowest = std::string("TERN_SHM_SHARED_CACHE=") + (shared ? "1" : "0");
    const std::string other = std::string("TERN_SHM_SHARED_CACHE=") + (shared ? "0" : "1");
    const std::vector<int> codes =
        runProcessPair({"TERN_SHM_KERNEL_COPY_RATIO=0.1",
                        std::string("SHM_ALLTOALL_TEST_CACHE_PRIOR=") + (shared ? "shared" : "separate")},
                       {{lowest}, {other}});
    if (codes[0] == kSkipExit && codes[1] == kSkipExit) GTEST_SKIP() << "no cache sharing probe or no CMA on this host";
    EXPECT_EQ(codes[0], 0) << (shared ? "shared" : "separate");
    EXPECT_EQ(codes[1], 0) << (shared ? "shared" : "separate");
  }
}

TEST(ShmAlltoAll, ForcedFormsThatCannotRunFailNamingWhy) {
  if (!shm::kAlltoAllDispatched) GTEST_SKIP() << "DirectCollectives does not dispatch all-to-all yet";
  struct Case {
    std::vector<std::string> env;
    size_t count;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {{"TERN_ALGO=alltoall:shm_cma"}, 70000, "TERN_ALGO=shm_cma cannot run"},  // threads: no CMA
      {{"TERN_ALGO=alltoall:shm_mapped", "SHM_ALLTOALL_TEST_STAGED=1"}, 70000, "TERN_ALGO=shm_mapped cannot run"},
      {{"TERN_ALGO=alltoall:shm_small"}, 70000, "exceed a staging slot"},
      // Alltoallv: only the run sees every rank's sizes, and fails on every rank.
      {{"TERN_ALGO=alltoallv:shm_small", "SHM_ALLTOALL_TEST_UNEVEN=1"}, 70000, "TERN_ALGO=shm_small cannot run"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> env = c.env;
    env.push_back("SHM_ALLTOALL_TEST_COUNT=" + std::to_string(c.count));
    env.push_back(std::string("SHM_ALLTOALL_TEST_EXPECT=") + c.expect);
    EXPECT_EQ(waitChild(spawnChild("DISABLED_ForcedFormThatCannotRunFails", env)), 0) << c.env[0];
  }
}

}  // namespace
}  // namespace tern
