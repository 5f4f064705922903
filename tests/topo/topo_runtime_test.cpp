// The job topology at communicator init: the per-rank records (their wire form, and that bytes from another process
// are refused with a clear error, never a crash), the job assembled from them, the per-process detection cache,
// communicators that assemble the same job on every rank, and the cost model pricing the network from the NICs.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "common/communicator_threads.hpp"
#include "core/algo_choice.hpp"
#include "core/communicator.hpp"
#include "planner/planner.hpp"
#include "topo/assemble.hpp"
#include "topo/local_topology.hpp"
#include "topo/topo_json.hpp"

namespace tern::topo {
namespace {

// A CPU host with two NUMA nodes and one Ethernet NIC of the given speed (none for 0), as a topology file would
// describe it.
HostTopology cpuHostWithNic(const std::string& id, double nicGbps) {
  std::string text = R"({"version": 1, "hosts": [{"id": ")" + id + R"(", "nodes": [
      {"id": "pkg0", "type": "package", "os_index": 0, "cores": 8},
      {"id": "numa0", "type": "numa", "parent": "pkg0", "os_index": 0},
      {"id": "numa1", "type": "numa", "parent": "pkg0", "os_index": 1})";
  if (nicGbps > 0) {
    text += R"(, {"id": "nic0", "type": "nic", "parent": "pkg0", "name": "eth0", "kind": "ethernet", "speed_gbps": )" +
            std::to_string(nicGbps) + "}";
  }
  return parseJobJson(text + "]}]}", "test").hosts.at(0);
}

RankRecord leaderRecord(const std::string& hostId, int numa, double nicGbps) {
  RankRecord r;
  r.hostId = hostId;
  r.numaOsIndex = numa;
  r.host = cpuHostWithNic("file-name-" + hostId, nicGbps);
  return r;
}

// Decoding must either succeed or throw tern::Error(ternInvalidArgument) naming the rank; anything else fails.
void expectCleanDecode(const std::string& bytes, int rank) {
  try {
    decodeRankRecord(bytes, rank);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidArgument) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("rank " + std::to_string(rank) + "'s topology record", 0), 0u) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a tern::Error: " << e.what() << " for " << bytes.substr(0, 80);
  }
}

TEST(TopoRecord, RoundTripKeepsHostNumaAndNetwork) {
  RankRecord r = leaderRecord("node-a:boot", 1, 25);
  r.network = Network{NetKind::kRoce, 100, 2.5};
  const RankRecord back = decodeRankRecord(encodeRankRecord(r), 0);
  EXPECT_EQ(back.hostId, "node-a:boot");
  EXPECT_EQ(back.numaOsIndex, 1);
  ASSERT_TRUE(back.host.has_value());
  HostTopology want = *r.host;
  want.id = "node-a:boot";  // the record's host id is the bootstrap's, whatever the graph called itself
  EXPECT_EQ(*back.host, want);
  ASSERT_TRUE(back.network.has_value());
  EXPECT_EQ(*back.network, *r.network);

  RankRecord follower;
  follower.hostId = "node-a:boot";
  const RankRecord f = decodeRankRecord(encodeRankRecord(follower), 1);
  EXPECT_FALSE(f.host.has_value());
  EXPECT_FALSE(f.network.has_value());
  EXPECT_EQ(f.numaOsIndex, -1);
  // Only leaders carry a graph: a follower's record stays small whatever the host.
  EXPECT_LT(encodeRankRecord(follower).size(), 64u);
  EXPECT_TRUE(f.gpuBusId.empty());

  // A rank that drives a GPU names it, in the driver's form or the short one.
  for (const char* busId : {"0000:1B:00.0", "1b:00.0"}) {
    follower.gpuBusId = busId;
    EXPECT_EQ(decodeRankRecord(encodeRankRecord(follower), 1).gpuBusId, busId);
  }
}

TEST(TopoRecord, RefusesBadBytesWithAClearError) {
  for (const std::string& bad :
       {std::string(),
        std::string("{not json"),
        std::string("[1,2]"),
        std::string("\x00\xff\xfe", 3),
        std::string(R"({"v":1})"),
        std::string(R"({"v":2,"host":"h","numa":0})"),
        std::string(R"({"v":1,"host":"","numa":0})"),
        std::string(R"({"v":1,"host":7,"numa":0})"),
        std::string(R"({"v":1,"host":"h","numa":1e300})"),
        std::string(R"({"v":1,"host":"h","numa":-2})"),
        std::string(R"({"v":1,"host":"h","numa":18446744073709551615})"),
        std::string(R"({"v":1,"host":"h","numa":0,"extra":1})"),
        std::string(R"({"v":1,"host":"h","numa":0,"gpu":""})"),
        std::string(R"({"v":1,"host":"h","numa":0,"gpu":3})"),
        std::string(R"({"v":1,"host":"h","numa":0,"gpu":"GPU-7f3a"})"),
        std::string(R"({"v":1,"host":"h","numa":0,"gpu":"0000:1b:00.0.1"})"),
        std::string(R"({"v":1,"host":"h","numa":0,"gpu":"00000000000000000000000000000:1b:00.0"})"),
        std::string(R"({"v":1,"host":"h","numa":0,"graph":[]})"),
        std::string(
            R"({"v":1,"host":"h","numa":0,"graph":{"id":"x","nodes":[{"id":"a","type":"gpu","parent":"zz"}]}})"),
        std::string(R"({"v":1,"host":"h","numa":0,"network":{"kind":"carrier-pigeon","speed_gbps":1,"latency_us":1}})"),
        std::string(R"({"v":1,"host":"h","numa":0,"network":{"kind":"ib","speed_gbps":0,"latency_us":1}})"),
        std::string(R"({"v":1,"host":"h","numa":0,"network":{"kind":"ib","speed_gbps":1e999,"latency_us":1}})"),
        std::string(R"({"v":1,"host":"h","numa":0})") + std::string(kMaxRankRecordBytes, ' ')}) {
    SCOPED_TRACE(bad.substr(0, 100));
    EXPECT_THROW(decodeRankRecord(bad, 5), Error);
    expectCleanDecode(bad, 5);
  }
  // A graph of more nodes than any host: refused before the graph is built.
  std::string huge = R"({"v":1,"host":"h","numa":0,"graph":{"id":"x","nodes":[)";
  for (int i = 0; i < 5000; ++i)
    huge += std::string(i ? "," : "") + R"({"id":"n)" + std::to_string(i) + R"(","type":"nic"})";
  huge += "]}}";
  EXPECT_THROW(decodeRankRecord(huge, 2), Error);
}

TEST(TopoRecord, MutatedRecordsNeverCrash) {
  RankRecord r = leaderRecord("node-b", 0, 10);
  r.network = Network{NetKind::kEthernet, 10, 15};
  r.gpuBusId = "0000:1b:00.0";
  const std::string good = encodeRankRecord(r);
  for (size_t cut = 0; cut < good.size(); ++cut) expectCleanDecode(good.substr(0, cut), 3);
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string s = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          s.erase(at, 1 + rng() % 8);
          break;
        default:
          s.insert(at, 1, "{}[]\",:0-9e"[rng() % 12]);
          break;
      }
      if (s.empty()) s = "x";
    }
    expectCleanDecode(s, 3);
  }
}

TEST(TopoAssemble, JobPlacesEveryRankOnItsHostNumaAndNic) {
  // Two hosts: ranks 0 and 2 on a, 1 and 3 on b (interleaved, as cyclic launchers place them).
  std::vector<RankRecord> records = {leaderRecord("a", 1, 1), leaderRecord("b", 0, 1), {}, {}};
  records[2].hostId = "a";
  records[2].numaOsIndex = 0;
  records[3].hostId = "b";
  records[3].numaOsIndex = -1;  // unbound on a two-node host: no NUMA node
  const std::vector<std::string> ids = {"a", "b", "a", "b"};
  const JobTopology job = assembleJobFromRecords(records, NetKind::kEthernet, &ids);
  ASSERT_EQ(job.hosts.size(), 2u);
  EXPECT_EQ(job.hosts[0].id, "a");
  EXPECT_EQ(job.hosts[1].id, "b");
  ASSERT_EQ(job.ranks.size(), 4u);
  const int hostOf[] = {0, 1, 0, 1};
  const char* numaOf[] = {"numa1", "numa0", "numa0", nullptr};
  for (int r = 0; r < 4; ++r) {
    const RankPlacement& p = job.ranks[r];
    EXPECT_EQ(p.host, hostOf[r]) << "rank " << r;
    if (numaOf[r] == nullptr) {
      EXPECT_EQ(p.numa, -1) << "rank " << r;
    } else {
      ASSERT_GE(p.numa, 0) << "rank " << r;
      EXPECT_EQ(job.hosts[p.host].nodes[p.numa].id, numaOf[r]) << "rank " << r;
    }
    ASSERT_GE(p.nic, 0) << "rank " << r;
    EXPECT_EQ(job.hosts[p.host].nodes[p.nic].name, "eth0");
  }
  EXPECT_EQ(job.network.kind, NetKind::kEthernet);
  EXPECT_EQ(job.network.speedGbps, 1);
  // The dump names every rank's NIC, and reads back as the same job.
  const std::string text = dumpJobJson(job);
  EXPECT_NE(text.find(R"("nic":"nic0")"), std::string::npos) << text;
  EXPECT_EQ(parseJobJson(text, "dump"), job);
}

// Ranks that drive GPUs sit on them in the job (the cost model of their device calls then prices NVLink and PCIe);
// a GPU the host's graph does not list leaves a CPU rank rather than failing init.
TEST(TopoAssemble, GpuRanksSitOnTheGpusTheyNamed) {
  const JobTopology dgx = parseJobJson(R"({"version": 1, "hosts": [{"id": "box", "nodes": [
      {"id": "pkg0", "type": "package", "os_index": 0, "cores": 8},
      {"id": "numa0", "type": "numa", "parent": "pkg0", "os_index": 0},
      {"id": "sw0", "type": "pci_switch", "parent": "pkg0"},
      {"id": "gpu0", "type": "gpu", "parent": "sw0", "busid": "0000:1b:00.0", "sm": 90},
      {"id": "gpu1", "type": "gpu", "parent": "sw0", "busid": "0000:43:00.0", "sm": 90}]}]})",
                                       "test");
  std::vector<RankRecord> records(4);
  for (RankRecord& r : records) r.hostId = "box";
  records[0].host = dgx.hosts[0];
  records[0].gpuBusId = "0000:43:00.0";
  records[1].gpuBusId = "1B:00.0";
  records[2].gpuBusId = "0000:99:00.0";  // not in the graph
  const JobTopology job = assembleJobFromRecords(records, NetKind::kEthernet);
  ASSERT_EQ(job.ranks.size(), 4u);
  const HostTopology& host = job.hosts[0];
  ASSERT_GE(job.ranks[0].gpu, 0);
  EXPECT_EQ(host.nodes[job.ranks[0].gpu].id, "gpu1");
  ASSERT_GE(job.ranks[1].gpu, 0);
  EXPECT_EQ(host.nodes[job.ranks[1].gpu].id, "gpu0");
  EXPECT_EQ(job.ranks[2].gpu, -1);
  EXPECT_EQ(job.ranks[3].gpu, -1);
  // The host planner prices every rank as a CPU (host buffers never touch a GPU); the device planner sees the GPUs.
  auto shared = std::make_shared<const JobTopology>(job);
  const auto hostPlanner = makeCommPlanner(4, {"box", "box", "box", "box"}, true, shared);
  for (int r = 0; r < 4; ++r) EXPECT_FALSE(hostPlanner->links().isGpu(r)) << "rank " << r;
  const auto devicePlanner = makeDevicePlanner(shared);
  ASSERT_NE(devicePlanner, nullptr);
  EXPECT_TRUE(devicePlanner->links().isGpu(0));
  EXPECT_TRUE(devicePlanner->links().isGpu(1));
  EXPECT_FALSE(devicePlanner->links().isGpu(2));
  EXPECT_EQ(devicePlanner->links().pair(0, 1).cls, planner::ModelLink::kPcie);
  records[0].gpuBusId.clear();
  records[1].gpuBusId.clear();
  records[2].gpuBusId.clear();
  EXPECT_EQ(makeDevicePlanner(std::make_shared<const JobTopology>(assembleJobFromRecords(records, NetKind::kEthernet))),
            nullptr);
}

TEST(TopoAssemble, RefusesInconsistentRecords) {
  std::vector<RankRecord> records = {leaderRecord("a", 0, 1), {}};
  records[1].hostId = "b";  // first rank of host b, without a graph
  EXPECT_THROW(assembleJobFromRecords(records, NetKind::kEthernet), Error);
  records[1].hostId = "a";
  const std::vector<std::string> ids = {"a", "c"};  // the bootstrap says rank 1 is elsewhere
  EXPECT_THROW(assembleJobFromRecords(records, NetKind::kEthernet, &ids), Error);
  EXPECT_NO_THROW(assembleJobFromRecords(records, NetKind::kEthernet));
}

TEST(TopoAssemble, FileNetworkOfRankZeroAndFallbackKind) {
  std::vector<RankRecord> records = {leaderRecord("a", 0, 100), leaderRecord("b", 0, 100)};
  records[0].network = Network{NetKind::kEthernet, 1, 40};
  JobTopology job = assembleJobFromRecords(records, NetKind::kEthernet);
  EXPECT_EQ(job.network.speedGbps, 1);
  EXPECT_EQ(job.network.latencyUs, 40);
  // Hosts without NICs (virtual interfaces only): the fallback kind, at its default latency.
  records = {leaderRecord("a", 0, 0), leaderRecord("b", 0, 0)};
  job = assembleJobFromRecords(records, NetKind::kEthernet);
  EXPECT_EQ(job.network.kind, NetKind::kEthernet);
  EXPECT_EQ(job.network.latencyUs, defaultNetLatencyUs(NetKind::kEthernet));
  EXPECT_EQ(job.ranks[0].nic, -1);
}

TEST(TopoLocal, DetectedOncePerProcess) {
  bool cached = true;
  const auto first = processLocalTopology("", &cached);
  const int loads = localTopologyLoads();
  const auto second = processLocalTopology("", &cached);
  EXPECT_TRUE(cached);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(localTopologyLoads(), loads);
  EXPECT_EQ(first->source, "detected");
  EXPECT_GE(first->host.count(NodeType::kNuma), 1);
  EXPECT_GE(first->host.totalCores(), 1);
  std::printf("detection took %.1f ms (once per process)\n", first->seconds * 1e3);
  // A bad file is an error, and is not remembered as a result.
  EXPECT_THROW(processLocalTopology("/nonexistent/topo.json"), Error);
  EXPECT_THROW(processLocalTopology("/nonexistent/topo.json"), Error);
}

TEST(TopoLocal, BoundNumaNodeIsOneOfTheHosts) {
  const int numa = boundNumaNode();
  const HostTopology& host = processLocalTopology("")->host;
  if (host.count(NodeType::kNuma) == 1) {
    EXPECT_EQ(numa, host.nodes[host.nodesOfType(NodeType::kNuma)[0]].osIndex);
  } else if (numa >= 0) {
    bool found = false;
    for (int n : host.nodesOfType(NodeType::kNuma)) found = found || host.nodes[n].osIndex == numa;
    EXPECT_TRUE(found) << numa;
  }
}

// Ranks as threads over TCP on loopback, and in-process: every rank assembles the same job, with every rank placed.
TEST(TopoCommunicator, EveryRankAssemblesTheSameJob) {
  for (const bool inproc : {false, true}) {
    SCOPED_TRACE(inproc ? "inproc" : "tcp");
    const int n = 3;
    std::vector<std::unique_ptr<Communicator>> comms = testing::createCommunicators(n, inproc);
    for (int r = 0; r < n; ++r) ASSERT_NE(comms[r], nullptr);
    const JobTopology& job = comms[0]->jobTopology();
    ASSERT_EQ(job.hosts.size(), 1u);
    EXPECT_EQ(job.hosts[0].id, comms[0]->hostIds()[0]);
    ASSERT_EQ(job.ranks.size(), static_cast<size_t>(n));
    HostTopology local = processLocalTopology("")->host;
    local.id = job.hosts[0].id;
    EXPECT_EQ(job.hosts[0], local);  // what every rank sees of this host is what detection found
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(comms[r]->jobTopology(), job) << "rank " << r;
      if (job.hosts[0].count(NodeType::kNuma) == 1) {
        EXPECT_GE(job.ranks[r].numa, 0);
      }
      if (job.hosts[0].count(NodeType::kNic) > 0) {
        EXPECT_GE(job.ranks[r].nic, 0);
      }
    }
    testing::destroyCommunicators(comms);
  }
}

// The cost model prices the network from the NICs of the assembled job, and that alone decides whether sign
// compression pays for a 4 MiB allreduce between two hosts; a calibration still overrides the NIC's figure.
TEST(TopoPlanner, NicSpeedPricesTheNetwork) {
  const double bytes = 4 << 20;
  for (const double gbps : {1.0, 100.0}) {
    SCOPED_TRACE(gbps);
    const std::vector<RankRecord> records = {leaderRecord("a", 0, gbps), leaderRecord("b", 0, gbps)};
    auto job = std::make_shared<const JobTopology>(assembleJobFromRecords(records, NetKind::kEthernet));
    const auto planner = makeCommPlanner(2, {"a", "b"}, true, job);
    const planner::PairLink& link = planner->links().pair(0, 1);
    EXPECT_EQ(link.cls, planner::ModelLink::kNetwork);
    EXPECT_NEAR(link.nicBeta, 8.0 / (gbps * 1e9), 1e-3 * 8.0 / (gbps * 1e9));
    const planner::Estimate plain = planner->rank(Collective::kAllReduce, bytes).front();
    const planner::Estimate sign = planner->estimateCompressedForm(Collective::kAllReduce, bytes, "sign", false);
    ASSERT_TRUE(sign.error.empty()) << sign.error;
    if (gbps == 1.0) {
      EXPECT_LT(sign.seconds, plain.seconds) << "sign should pay on 1 Gb/s";
    } else {
      EXPECT_GT(sign.seconds, plain.seconds) << "sign should not pay on 100 Gb/s";
    }
    planner::CostParams params = planner::defaultCostParams();
    params.links["network"] = planner::LinkCalibration{{50e-6, 1e-9}, -1, {}};
    const planner::LinkTable calibrated(*job, planner::IntraTransport::kShm, params);
    EXPECT_DOUBLE_EQ(calibrated.pair(0, 1).nicBeta, 1e-9);
  }
}

}  // namespace
}  // namespace tern::topo
