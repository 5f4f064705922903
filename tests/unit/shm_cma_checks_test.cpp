// The CMA learner (src/algorithms/shm/cma_learner.hpp) between processes, at sizes whose default form is the
// one-phase one (shm_small): where the setup probe found the host's kernel copies slow, the band starts avoided and
// runs one-phase, and its check still comes, at call kConfirmCall for a small band, as kCheckCalls calls of the CMA
// form. The one-phase calls count for the learner; if they did not, the band would never reach its check and never find
// that CMA pays (as it does on a VM whose vCPUs share no cache). Results are checked on every call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms/shm/cma_learner.hpp"
#include "algorithms/shm/direct_collectives.hpp"
#include "tern/tern.h"
#include "test_child.hpp"

namespace tern {
namespace {

constexpr const char* kChildMarker = "SHM_CMA_CHECKS_TEST_CHILD";
constexpr int kSkipExit = 77;
// 16 KiB of floats: one-phase by default, within the CMA forms' sizes, and in a band that starts avoided where kernel
// copies measured slow (larger bands may start on CMA, see cma_learner.hpp).
constexpr size_t kCount = 4096;
static_assert(kCount * sizeof(float) < shm::CmaLearner::kLargeCmaMinBytes);

bool inChild() { return std::getenv(kChildMarker) != nullptr; }

float valueAt(size_t i, int rank, int call) {
  return static_cast<float>((i * 5 + static_cast<size_t>(rank) * 3 + static_cast<size_t>(call) * 11) % 251);
}

TEST(ShmCmaChecks, DISABLED_ProcessPairChild) {
  if (!inChild()) GTEST_SKIP() << "run by the ShmCmaChecks tests";
  const int rank = std::atoi(std::getenv("SHM_CMA_CHECKS_TEST_RANK"));
  const bool broadcast = std::string(std::getenv("SHM_CMA_CHECKS_TEST_COLL")) == "broadcast";
  ternComm_t comm = nullptr;
  ASSERT_EQ(testing::initChildRank("SHM_CMA_CHECKS_TEST_ID", 2, rank, &comm), ternSuccess) << ternGetLastError(nullptr);
  if (std::getenv("SHM_CMA_CHECKS_TEST_PROBE") != nullptr) {
    // TERN_ALGO forces the CMA form: whether this host lets the ranks read each other at all (ptrace scope).
    std::vector<float> in(kCount, 1.0f), out(kCount);
    const ternResult_t res = ternBroadcast(in.data(), out.data(), kCount, ternFloat32, 0, comm);
    const std::string error = ternGetLastError(comm);
    ternCommDestroy(comm);
    if (res == ternInvalidUsage && error.find("cannot run") != std::string::npos) {
      std::fprintf(stderr, "CMA between the ranks refused on this host: %s\n", error.c_str());
      std::_Exit(kSkipExit);
    }
    ASSERT_EQ(res, ternSuccess) << error;
    return;
  }
  shm::countRunsForTesting(true);
  const int calls = shm::CmaLearner::kConfirmCall + shm::CmaLearner::kCheckCalls + 1;
  std::vector<bool> ranCma;
  std::vector<float> in(kCount), out(broadcast ? kCount : 2 * kCount);
  for (int call = 0; call < calls; ++call) {
    for (size_t i = 0; i < kCount; ++i) in[i] = valueAt(i, rank, call);
    std::fill(out.begin(), out.end(), -1.0f);
    const uint64_t before = shm::runsForTesting(shm::ShmAlgorithm::kCma);
    if (broadcast) {
      ASSERT_EQ(ternBroadcast(in.data(), out.data(), kCount, ternFloat32, 0, comm), ternSuccess)
          << ternGetLastError(comm);
    } else {
      ASSERT_EQ(ternAllGather(in.data(), out.data(), kCount, ternFloat32, comm), ternSuccess) << ternGetLastError(comm);
    }
    ranCma.push_back(shm::runsForTesting(shm::ShmAlgorithm::kCma) > before);
    for (size_t i = 0; i < out.size(); ++i) {
      const float want = broadcast ? valueAt(i, 0, call) : valueAt(i % kCount, static_cast<int>(i / kCount), call);
      ASSERT_EQ(out[i], want) << "rank " << rank << " call " << call << " element " << i;
    }
  }
  ternCommDestroy(comm);
  const int check = shm::CmaLearner::kConfirmCall;
  for (int call = 0; call < check; ++call) EXPECT_FALSE(ranCma[call]) << "call " << call << " of the avoided band";
  for (int k = 0; k < shm::CmaLearner::kCheckCalls; ++k) EXPECT_TRUE(ranCma[check + k]) << "the check's call " << k;
  // The call after the check, where each rank offers its vote, takes the path where the offers meet: the staged
  // pipeline where a rank voted against CMA.
  const uint64_t small = shm::runsForTesting(shm::ShmAlgorithm::kSmall);
  const uint64_t cma = shm::runsForTesting(shm::ShmAlgorithm::kCma);
  const uint64_t pipelined = shm::runsForTesting(shm::ShmAlgorithm::kPipelined);
  EXPECT_EQ(small + cma + pipelined, static_cast<uint64_t>(calls));
  EXPECT_LE(pipelined, 1u) << "only the vote's call may run the staged pipeline";
  EXPECT_EQ(pipelined == 1, !ranCma[check + shm::CmaLearner::kCheckCalls]);
}

// Both ranks' exit codes for `coll` with the kernel copies declared slow (the band starts avoided); probe: one call
// of the forced CMA form instead, which exits kSkipExit where the host refuses CMA between the ranks.
std::vector<int> runPair(const char* coll, bool probe = false) {
  ternUniqueId id;
  EXPECT_EQ(ternGetUniqueId(&id), ternSuccess);
  std::vector<std::vector<std::string>> envs;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env = {
        "TERN_SOCKET_IFNAME=lo", "TERN_SHM_KERNEL_COPY_RATIO=0.1", std::string("SHM_CMA_CHECKS_TEST_COLL=") + coll,
        "SHM_CMA_CHECKS_TEST_RANK=" + std::to_string(r), "SHM_CMA_CHECKS_TEST_ID=" + testing::uniqueIdToHex(id)};
    if (probe) {
      env.emplace_back("SHM_CMA_CHECKS_TEST_PROBE=1");
      env.emplace_back("TERN_ALGO=broadcast:shm_cma");
    }
    envs.push_back(env);
  }
  return testing::runTestChildren("ShmCmaChecks.DISABLED_ProcessPairChild", kChildMarker, envs);
}

TEST(ShmCmaChecks, AnAvoidedOnePhaseBandIsStillCheckedByTheCmaForm) {
  const std::vector<int> probe = runPair("broadcast", true);
  if (probe[0] == kSkipExit && probe[1] == kSkipExit) GTEST_SKIP() << "CMA between processes refused on this host";
  ASSERT_EQ(probe[0], 0) << "the forced CMA probe: rank 0 (see its output above)";
  ASSERT_EQ(probe[1], 0) << "the forced CMA probe: rank 1";
  for (const char* coll : {"broadcast", "allgather"}) {
    const std::vector<int> codes = runPair(coll);
    EXPECT_EQ(codes[0], 0) << coll << ": rank 0 (see its output above)";
    EXPECT_EQ(codes[1], 0) << coll << ": rank 1";
  }
}

}  // namespace
}  // namespace tern
