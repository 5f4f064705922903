// TERN_ALGO=<shared-memory catalogue entry> (or the same in ternConfig_t.algo): forcing each one runs exactly it (the
// shm run counters say which ran), the results match the independent reference (tests/common/reference.hpp),
// ternQueryAlgorithm reports it, and a forced entry that cannot run a call fails with a message naming why, on every
// rank.
//
// The knobs are read once per process, so every case runs in a child: this binary again, one DISABLED_ child test
// by exact name, with TERN_ALGO in its environment. Ranks are threads of the child (shm_small, shm_pipelined,
// shm_mapped), or two child processes (shm_cma, which reads peers in other processes).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/shm/direct_collectives.hpp"
#include "algorithms/shm/shm_catalogue.hpp"
#include "common/reference.hpp"
#include "rank_threads.hpp"
#include "tern/tern_ext.h"
#include "test_child.hpp"

namespace tern {
namespace {

constexpr int kSkipExit = 77;  // the child found the host unable to run the case (said why on stderr)

pid_t spawnChild(const std::string& test, const std::vector<std::string>& extraEnv) {
  return testing::spawnTestChild("ShmForcedChild." + test, "SHM_FORCED_TEST_CHILD", extraEnv);
}

int waitChild(pid_t pid) { return testing::waitTestChild(pid); }

// gtest exits 1 when a test failed; a skip inside the child is reported as kSkipExit by the child itself.
int runChild(const std::string& test, const std::vector<std::string>& env) { return waitChild(spawnChild(test, env)); }

// Exact inputs (small integers in float32: every summation order gives the same bits).
double inputValue(int rank, size_t i) { return static_cast<double>(static_cast<int>((i * 7 + rank * 13) % 17) - 8); }

// Runs coll on count float32 elements per rank with this rank's inputs and checks the output against the
// reference. Returns the call's result.
ternResult_t runAndCheck(Collective coll, size_t count, ternComm_t comm, int r, int n) {
  const int root = n - 1;
  const size_t inElems = coll == Collective::kReduceScatter ? count * n : count;
  const size_t outElems = coll == Collective::kAllGather ? count * n : count;
  std::vector<char> in = ref::makeBuffer(inElems, ternFloat32, [&](size_t i) { return inputValue(r, i); });
  std::vector<char> out(outElems * 4 + 4, 0x5a);
  ternResult_t res = ternSuccess;
  switch (coll) {
    case Collective::kAllReduce:
      res = ternAllReduce(in.data(), out.data(), count, ternFloat32, ternSum, comm);
      break;
    case Collective::kReduceScatter:
      res = ternReduceScatter(in.data(), out.data(), count, ternFloat32, ternSum, comm);
      break;
    case Collective::kAllGather:
      res = ternAllGather(in.data(), out.data(), count, ternFloat32, comm);
      break;
    case Collective::kBroadcast:
      res = ternBroadcast(in.data(), out.data(), count, ternFloat32, root, comm);
      break;
    case Collective::kReduce:
      res = ternReduce(in.data(), out.data(), count, ternFloat32, ternSum, root, comm);
      break;
    case Collective::kBarrier:
      return ternBarrier(comm);
    default:
      ADD_FAILURE() << "no such collective in this test";
      return ternInternalError;
  }
  if (res != ternSuccess) return res;
  std::vector<char> want;
  switch (coll) {
    case Collective::kAllReduce:
    case Collective::kReduce:
      want = ref::reduceBuffer(n, count, 0, ternFloat32, ternSum, [](int p, size_t i) { return inputValue(p, i); });
      break;
    case Collective::kReduceScatter:
      want = ref::reduceBuffer(n, count, r * count, ternFloat32, ternSum,
                               [](int p, size_t i) { return inputValue(p, i); });
      break;
    case Collective::kAllGather:
      want = ref::makeBuffer(outElems, ternFloat32,
                             [&](size_t j) { return inputValue(static_cast<int>(j / count), j % count); });
      break;
    default:  // broadcast
      want = ref::makeBuffer(count, ternFloat32, [&](size_t i) { return inputValue(root, i); });
      break;
  }
  if (coll != Collective::kReduce || r == root) {
    EXPECT_EQ(std::memcmp(out.data(), want.data(), outElems * 4), 0)
        << collectiveName(coll) << " count " << count << " rank " << r << " differs from the reference";
  }
  return res;
}

const char* queryName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    default:
      return "barrier";
  }
}

// Counts the forced algorithm must run at: ones where the default would pick another (small vs chunked), so
// that running the forced one proves the forcing.
std::vector<size_t> countsFor(shm::ShmAlgorithm a) {
  if (a == shm::ShmAlgorithm::kSmall) return {7, 30000};  // 120 KB: beyond the gathers' default one-phase limit
  return {1023, 300001};                                  // 4 KB: the default runs it in one phase
}

std::vector<const AlgorithmInfo*> entriesNamed(const std::string& name) {
  std::vector<const AlgorithmInfo*> out;
  for (const AlgorithmInfo& a : catalogue()) {
    // All-to-all's forms are forced by shm_alltoall_test.cpp.
    if (a.family == AlgorithmFamily::kSharedMemory && name == a.name && !shm::isAlltoAll(a.collective)) {
      out.push_back(&a);
    }
  }
  return out;
}

// Runs every collective that has the forced entry on n ranks of this process (or, with comm given, this one
// rank) and checks counters, results and the reported name.
void runForcedEntries(ternComm_t comm, int r, int n, const std::string& forced) {
  const shm::ShmAlgorithm algo = shm::shmAlgorithmNamed(forced);
  for (const AlgorithmInfo* e : entriesNamed(forced)) {
    for (size_t count : countsFor(algo)) {
      if (e->collective == Collective::kBarrier && count != countsFor(algo)[0]) continue;
      char name[64] = "";
      double us = -1;
      ASSERT_EQ(ternQueryAlgorithm(comm, queryName(e->collective), count, ternFloat32, name, sizeof(name), &us),
                ternSuccess)
          << ternGetLastError(comm);
      EXPECT_EQ(std::string(name), forced) << collectiveName(e->collective) << " count " << count;
      EXPECT_GT(us, 0);
      ASSERT_EQ(runAndCheck(e->collective, count, comm, r, n), ternSuccess)
          << collectiveName(e->collective) << " count " << count << ": " << ternGetLastError(comm);
    }
  }
}

size_t callsFor(const std::string& forced) {
  size_t calls = 0;
  for (const AlgorithmInfo* e : entriesNamed(forced)) {
    calls += e->collective == Collective::kBarrier ? 1 : countsFor(shm::shmAlgorithmNamed(forced)).size();
  }
  return calls;
}

void expectOnlyForcedRan(const std::string& forced, uint64_t callsPerProcess) {
  for (shm::ShmAlgorithm a : {shm::ShmAlgorithm::kSmall, shm::ShmAlgorithm::kPipelined, shm::ShmAlgorithm::kCma,
                              shm::ShmAlgorithm::kMapped}) {
    EXPECT_EQ(shm::runsForTesting(a), shm::shmAlgorithmName(a) == forced ? callsPerProcess : 0)
        << "calls run by " << shm::shmAlgorithmName(a) << " with TERN_ALGO=" << forced;
  }
}

bool inChild() { return std::getenv("SHM_FORCED_TEST_CHILD") != nullptr; }

// The CMA reduce-scatter (cma_allreduce.cpp) on every datatype and op, out of place and in both in-place forms,
// against the reference (inputs kept non-negative for the unsigned types; integer products wrap as the reference
// models); then a float sum of several CMA pieces per rank.
void checkCmaReduceScatterEveryTypeAndOp(ternComm_t comm, int r, int n) {
  // where: 0 out of place, 1 in place at this rank's block, 2 recvbuff == sendbuff (tern.h's other in-place form,
  // which runs out of place into scratch: the output lies over a peer's block).
  auto check = [&](size_t count, ternDataType_t dtype, ternRedOp_t op, int where) {
    const size_t e = ref::elementSize(dtype);
    auto value = [dtype](int p, size_t i) { return inputValue(p, i) + (ref::isSigned(dtype) ? 0 : 8); };
    const std::vector<char> want = ref::reduceBuffer(n, count, r * count, dtype, op, value);
    std::vector<char> in = ref::makeBuffer(count * n, dtype, [&](size_t i) { return value(r, i); });
    std::vector<char> out(count * e, 0x5a);
    char* recv = where == 0 ? out.data() : where == 1 ? in.data() + r * count * e : in.data();
    const uint64_t before = shm::runsForTesting(shm::ShmAlgorithm::kCma);
    ASSERT_EQ(ternReduceScatter(in.data(), recv, count, dtype, op, comm), ternSuccess) << ternGetLastError(comm);
    EXPECT_EQ(shm::runsForTesting(shm::ShmAlgorithm::kCma), before + 1);
    EXPECT_EQ(std::memcmp(recv, want.data(), want.size()), 0)
        << "reduce-scatter by CMA of " << count << " elements, datatype " << dtype << " op " << op << " form " << where
        << " rank " << r;
  };
  for (int t = 0; t < ternNumTypes; ++t) {
    for (int o = 0; o < ternNumOps; ++o) {
      for (const int where : {0, 1, 2}) check(1023, static_cast<ternDataType_t>(t), static_cast<ternRedOp_t>(o), where);
    }
  }
  for (const int where : {0, 1, 2}) check((size_t{1} << 20) + 3, ternFloat32, ternSum, where);
}

// ---------------------------------------------------------------------------------------------------------------
// Children

TEST(ShmForcedChild, DISABLED_ThreadRanksRunTheForcedAlgorithm) {
  ASSERT_TRUE(inChild()) << "run by ShmForcedAlgorithms.*";
  const std::string forced = std::getenv("TERN_ALGO");
  shm::countRunsForTesting(true);
  testing::runOnRanks(2, testing::Wire::kTcp, [&](ternComm_t comm, int r) {
    EXPECT_STREQ(ternCommTransportName(comm), "shm+tcp");
    runForcedEntries(comm, r, 2, forced);
  });
  expectOnlyForcedRan(forced, 2 * callsFor(forced));
}

// The same through ternConfig_t.algo, with no TERN_ALGO in the environment: a communicator's own selection reaches
// the shared-memory entries too.
TEST(ShmForcedChild, DISABLED_ConfigAlgoForcesTheEntry) {
  ASSERT_TRUE(inChild()) << "run by ShmForcedAlgorithms.*";
  ASSERT_EQ(std::getenv("TERN_ALGO"), nullptr);
  const std::string forced = std::getenv("SHM_FORCED_TEST_CONFIG_ALGO");
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.algo = forced.c_str();
  shm::countRunsForTesting(true);
  testing::runOnRanks(
      2, testing::Wire::kTcp,
      [&](ternComm_t comm, int r) {
        EXPECT_STREQ(ternCommTransportName(comm), "shm+tcp");
        runForcedEntries(comm, r, 2, forced);
      },
      &config);
  expectOnlyForcedRan(forced, 2 * callsFor(forced));
}

TEST(ShmForcedChild, DISABLED_ProcessRankRunsTheForcedAlgorithm) {
  ASSERT_TRUE(inChild()) << "run by ShmForcedAlgorithms.*";
  const std::string forced = std::getenv("TERN_ALGO");
  const int rank = std::atoi(std::getenv("SHM_FORCED_TEST_RANK"));
  ternUniqueId id;
  const std::string hex = std::getenv("SHM_FORCED_TEST_ID");
  ASSERT_TRUE(testing::uniqueIdFromHex(hex, &id)) << hex;
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 30000;
  ternComm_t comm = nullptr;
  ASSERT_EQ(ternCommInitRankConfig(&comm, 2, id, rank, &config), ternSuccess) << ternGetLastError(nullptr);
  shm::countRunsForTesting(true);
  // Whether this host lets the ranks read each other (CMA needs ptrace access between them): a forced shm_cma
  // fails alike on both ranks when it does not, naming the need.
  std::vector<float> probe(1023, 1.0f), out(1023);
  if (forced == "shm_cma" &&
      ternAllReduce(probe.data(), out.data(), probe.size(), ternFloat32, ternSum, comm) == ternInvalidUsage &&
      std::strstr(ternGetLastError(comm), "TERN_ALGO=shm_cma cannot run") != nullptr) {
    std::fprintf(stderr, "CMA unavailable between the ranks: %s\n", ternGetLastError(comm));
    ternCommDestroy(comm);
    std::_Exit(kSkipExit);
  }
  const uint64_t probeCalls = shm::runsForTesting(shm::ShmAlgorithm::kCma);
  runForcedEntries(comm, rank, 2, forced);
  expectOnlyForcedRan(forced, probeCalls + callsFor(forced));
  if (forced == "shm_cma") checkCmaReduceScatterEveryTypeAndOp(comm, rank, 2);
  ternCommDestroy(comm);
}

TEST(ShmForcedChild, DISABLED_ForcedAlgorithmThatCannotRunFails) {
  ASSERT_TRUE(inChild()) << "run by ShmForcedAlgorithms.*";
  const std::string expect = std::getenv("SHM_FORCED_TEST_EXPECT");
  const Collective coll = static_cast<Collective>(std::atoi(std::getenv("SHM_FORCED_TEST_COLL")));
  const size_t count = std::strtoull(std::getenv("SHM_FORCED_TEST_COUNT"), nullptr, 10);
  if (std::getenv("SHM_FORCED_TEST_STAGED") != nullptr) shm::setZeroCopyModeForTesting(shm::ZeroCopyMode::kStagedOnly);
  testing::runOnRanks(2, testing::Wire::kTcp, [&](ternComm_t comm, int r) {
    EXPECT_EQ(runAndCheck(coll, count, comm, r, 2), ternInvalidUsage);
    EXPECT_NE(std::strstr(ternGetLastError(comm), expect.c_str()), nullptr)
        << "rank " << r << ": " << ternGetLastError(comm);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The cases

TEST(ShmForcedAlgorithms, EveryEntryIsForcedInTheCases) {
  std::set<std::string> names;
  for (const AlgorithmInfo& a : catalogue()) {
    if (a.family == AlgorithmFamily::kSharedMemory) names.insert(a.name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"shm_small", "shm_pipelined", "shm_cma", "shm_mapped"}));
}

TEST(ShmForcedAlgorithms, ThreadRanksRunEachForcedAlgorithm) {
  for (const char* name : {"shm_small", "shm_pipelined", "shm_mapped"}) {
    EXPECT_EQ(runChild("DISABLED_ThreadRanksRunTheForcedAlgorithm", {std::string("TERN_ALGO=") + name}), 0) << name;
  }
}

TEST(ShmForcedAlgorithms, ConfigAlgoForcesEachEntry) {
  for (const char* name : {"shm_small", "shm_pipelined", "shm_mapped"}) {
    EXPECT_EQ(runChild("DISABLED_ConfigAlgoForcesTheEntry", {std::string("SHM_FORCED_TEST_CONFIG_ALGO=") + name}), 0)
        << name;
  }
}

TEST(ShmForcedAlgorithms, ProcessRanksRunShmCma) {
  ternUniqueId id;
  ASSERT_EQ(ternGetUniqueId(&id), ternSuccess);
  const std::string hex = testing::uniqueIdToHex(id);
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    pids.push_back(
        spawnChild("DISABLED_ProcessRankRunsTheForcedAlgorithm",
                   {"TERN_ALGO=shm_cma", "SHM_FORCED_TEST_RANK=" + std::to_string(r), "SHM_FORCED_TEST_ID=" + hex}));
  }
  std::vector<int> codes;
  for (pid_t p : pids) codes.push_back(waitChild(p));
  if (codes[0] == kSkipExit && codes[1] == kSkipExit) GTEST_SKIP() << "CMA between processes refused on this host";
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
}

TEST(ShmForcedAlgorithms, ForcedAlgorithmsThatCannotRunFailNamingWhy) {
  struct Case {
    std::vector<std::string> env;
    Collective coll;
    size_t count;
    const char* expect;
  };
  const std::vector<Case> cases = {
      // Threads of one process read each other in place: no CMA.
      {{"TERN_ALGO=allreduce:shm_cma"}, Collective::kAllReduce, 1023, "TERN_ALGO=shm_cma cannot run"},
      // Staged buffers are addressable by no peer.
      {{"TERN_ALGO=shm_mapped"}, Collective::kAllReduce, 1023, "TERN_ALGO=shm_mapped cannot run"},
      {{"TERN_ALGO=shm_small"}, Collective::kAllGather, 70000, "exceed its small area"},
      {{"TERN_ALGO=shm_pipelined", "TERN_SHM_DISABLE=1"},
       Collective::kAllReduce,
       1023,
       "needs every rank of the communicator on one host"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> env = c.env;
    env.push_back("SHM_FORCED_TEST_COLL=" + std::to_string(static_cast<int>(c.coll)));
    env.push_back("SHM_FORCED_TEST_COUNT=" + std::to_string(c.count));
    env.push_back(std::string("SHM_FORCED_TEST_EXPECT=") + c.expect);
    if (std::string(c.expect).find("shm_mapped") != std::string::npos) env.push_back("SHM_FORCED_TEST_STAGED=1");
    EXPECT_EQ(runChild("DISABLED_ForcedAlgorithmThatCannotRunFails", env), 0) << c.env[0];
  }
}

}  // namespace
}  // namespace tern
