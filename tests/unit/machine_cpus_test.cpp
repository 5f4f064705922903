// Whether the ranks that share a machine's CPUs each have one of their own (machineRanksOwnCpus, bootstrap.hpp): judged
// over every rank of the machine, whatever host TERN_HOSTID puts it in, from the machine ids and CPU masks the ranks
// join the bootstrap with. Simulated nodes (network namespaces of one machine) share its CPUs, and their waits must
// not busy-poll where they outnumber them.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/host_id.hpp"
#include "transport/bootstrap.hpp"
#include "transport/spin_policy.hpp"

namespace tern {
namespace {

CpuMask maskOf(std::initializer_list<int> cpus) {
  CpuMask m{};
  for (int c : cpus) m[c / 64] |= uint64_t{1} << (c % 64);
  return m;
}

BootstrapResult table(const std::vector<std::string>& hosts, const std::vector<std::string>& machines,
                      const std::vector<CpuMask>& masks) {
  BootstrapResult boot;
  for (size_t r = 0; r < hosts.size(); ++r) {
    PeerInfo p;
    p.hostId = hosts[r];
    p.machineId = machines[r];
    p.cpus = masks[r];
    boot.peers.push_back(p);
  }
  return boot;
}

TEST(MachineCpus, SimulatedNodesOfOneMachineShareItsCpus) {
  // Two "nodes" of two ranks each (TERN_HOSTID n0, n1) on one 2-CPU machine: four ranks, two CPUs.
  const CpuMask both = maskOf({0, 1});
  const BootstrapResult oneMachine = table({"n0", "n0", "n1", "n1"}, {"m", "m", "m", "m"}, {both, both, both, both});
  for (int r = 0; r < 4; ++r) EXPECT_FALSE(machineRanksOwnCpus(oneMachine, r)) << r;
  // The same ranks on two real machines of two CPUs each.
  const BootstrapResult twoMachines = table({"n0", "n0", "n1", "n1"}, {"a", "a", "b", "b"}, {both, both, both, both});
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(machineRanksOwnCpus(twoMachines, r)) << r;
  // One node per CPU of a 2-CPU machine (pinned): they own them.
  const BootstrapResult pinned = table({"n0", "n1"}, {"m", "m"}, {maskOf({0}), maskOf({1})});
  EXPECT_TRUE(machineRanksOwnCpus(pinned, 0));
  EXPECT_TRUE(machineRanksOwnCpus(pinned, 1));
  // A machine whose ranks share, beside one whose ranks do not: each judges its own.
  const BootstrapResult mixed =
      table({"x", "x", "y", "y"}, {"a", "a", "b", "b"}, {maskOf({0}), maskOf({0}), maskOf({0}), maskOf({1})});
  EXPECT_FALSE(machineRanksOwnCpus(mixed, 0));
  EXPECT_FALSE(machineRanksOwnCpus(mixed, 1));
  EXPECT_TRUE(machineRanksOwnCpus(mixed, 2));
  EXPECT_TRUE(machineRanksOwnCpus(mixed, 3));
}

TEST(MachineCpus, TheBootstrapCarriesEveryRanksMachineAndMask) {
  constexpr int kRanks = 3;
  const UniqueIdData id = createTcpUniqueId();
  std::vector<BootstrapResult> results(kRanks);
  std::vector<std::thread> threads;
  threads.reserve(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        // Each rank its own host, as TERN_HOSTID makes of network namespaces: the machine id stays the machine's.
        results[r] =
            joinBootstrap(id, r, kRanks, "host" + std::to_string(r), Clock::now() + std::chrono::seconds(30), nullptr);
      } catch (const Error& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(results[r].peers.size(), static_cast<size_t>(kRanks));
    for (int p = 0; p < kRanks; ++p) {
      EXPECT_EQ(results[r].peers[p].hostId, "host" + std::to_string(p));
      EXPECT_EQ(results[r].peers[p].machineId, machineId());
      EXPECT_EQ(results[r].peers[p].cpus, ownCpuMask());
    }
    EXPECT_EQ(machineRanksOwnCpus(results[r], r), ranksOwnCpus(std::vector<CpuMask>(kRanks, ownCpuMask())));
  }
}

}  // namespace
}  // namespace tern
