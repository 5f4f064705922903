// Long point-to-point messages between processes on one host (src/transport/shm/shm_transport.cpp): by rendezvous
// (the receiver reads the sender's buffer with process_vm_readv) where the host's kernel copies are fast, through
// the ring's slots where the setup probe found them slow (TERN_SHM_KERNEL_COPY_RATIO stands in for the probe), and
// received intact either way.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tern/tern.h"
#include "test_child.hpp"
#include "transport/shm/shm_transport.hpp"

namespace tern {
namespace {

constexpr const char* kChildMarker = "SHM_RENDEZVOUS_TEST_CHILD";
constexpr int kSkipExit = 77;
constexpr size_t kCount = size_t{1} << 18;  // 1 MiB of floats: far above the rendezvous size

bool inChild() { return std::getenv(kChildMarker) != nullptr; }

TEST(ShmRendezvous, DISABLED_ProcessPairChild) {
  if (!inChild()) GTEST_SKIP() << "run by ShmRendezvous.LongMessagesFollowTheKernelCopyRate";
  const int rank = std::atoi(std::getenv("SHM_RENDEZVOUS_TEST_RANK"));
  const bool expectRendezvous = std::getenv("SHM_RENDEZVOUS_TEST_EXPECT") != nullptr;
  ternUniqueId id;
  ASSERT_TRUE(testing::uniqueIdFromHex(std::getenv("SHM_RENDEZVOUS_TEST_ID"), &id));
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 30000;
  ternComm_t comm = nullptr;
  ASSERT_EQ(ternCommInitRankConfig(&comm, 2, id, rank, &config), ternSuccess) << ternGetLastError(nullptr);
  const uint64_t before = shm::ShmTransport::rendezvousSendsForTesting();
  std::vector<float> mine(kCount), theirs(kCount, -1.0f);
  for (size_t i = 0; i < kCount; ++i) mine[i] = static_cast<float>((i * 7 + static_cast<size_t>(rank)) % 1000);
  ASSERT_EQ(ternGroupStart(), ternSuccess);
  ASSERT_EQ(ternSend(mine.data(), kCount, ternFloat32, 1 - rank, comm), ternSuccess);
  ASSERT_EQ(ternRecv(theirs.data(), kCount, ternFloat32, 1 - rank, comm), ternSuccess);
  ASSERT_EQ(ternGroupEnd(), ternSuccess) << ternGetLastError(comm);
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) {
    wrong += theirs[i] == static_cast<float>((i * 7 + static_cast<size_t>(1 - rank)) % 1000) ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0u) << "rank " << rank << " received a damaged message";
  const uint64_t rendezvous = shm::ShmTransport::rendezvousSendsForTesting() - before;
  ternCommDestroy(comm);
  if (expectRendezvous && rendezvous == 0) {
    std::fprintf(stderr, "CMA between the ranks refused on this host: the message went through the ring\n");
    std::_Exit(kSkipExit);
  }
  EXPECT_EQ(rendezvous, expectRendezvous ? 1u : 0u) << "rank " << rank;
}

// Both ranks' codes, with TERN_SHM_KERNEL_COPY_RATIO=ratio and whether the send must go by rendezvous.
std::vector<int> runPair(const char* ratio, bool expectRendezvous) {
  ternUniqueId id;
  EXPECT_EQ(ternGetUniqueId(&id), ternSuccess);
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env = {"TERN_SOCKET_IFNAME=lo", std::string("TERN_SHM_KERNEL_COPY_RATIO=") + ratio,
                                    "SHM_RENDEZVOUS_TEST_RANK=" + std::to_string(r),
                                    "SHM_RENDEZVOUS_TEST_ID=" + testing::uniqueIdToHex(id)};
    if (expectRendezvous) env.emplace_back("SHM_RENDEZVOUS_TEST_EXPECT=1");
    pids.push_back(testing::spawnTestChild("ShmRendezvous.DISABLED_ProcessPairChild", kChildMarker, env));
  }
  std::vector<int> codes;
  for (pid_t p : pids) codes.push_back(testing::waitTestChild(p));
  return codes;
}

TEST(ShmRendezvous, LongMessagesFollowTheKernelCopyRate) {
  // Slow kernel copies: two copies through the slots beat one at a fraction of memcpy's rate.
  std::vector<int> codes = runPair("0.1", false);
  EXPECT_EQ(codes[0], 0) << "slow kernel copies: rank 0 (see its output above)";
  EXPECT_EQ(codes[1], 0) << "slow kernel copies: rank 1";
  codes = runPair("1", true);
  if (codes[0] == kSkipExit && codes[1] == kSkipExit) GTEST_SKIP() << "CMA between processes refused on this host";
  EXPECT_EQ(codes[0], 0) << "fast kernel copies: rank 0 (see its output above)";
  EXPECT_EQ(codes[1], 0) << "fast kernel copies: rank 1";
}

}  // namespace
}  // namespace tern
