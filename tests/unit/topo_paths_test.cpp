// Path types and rank-to-rank paths: NCCL's classification on the reference systems, bottleneck bandwidths, NIC
// choice, and hand-built graphs for the corner cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "topo/paths.hpp"
#include "topo/render.hpp"
#include "topo/topo_file.hpp"

namespace tern::topo {
namespace {

namespace fs = std::filesystem;

fs::path sourceDir() {
  if (const char* env = std::getenv("TERN_SOURCE_DIR")) return env;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

JobTopology load(const char* name) { return loadTopologyFile((sourceDir() / "topo" / name).string()); }

TEST(TopoPaths, DgxH100DevicePaths) {
  const JobTopology job = load("dgx-h100.json");
  const HostTopology& h = job.hosts[0];
  HostPaths paths(h);
  auto type = [&](const char* a, const char* b) { return paths.get(h.find(a), h.find(b)).type; };
  // Every GPU pair goes through NVSwitch: NVL at the 18-link NVLink4 rate (900 GB/s bidirectional).
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const Path& p = paths.get(h.find("gpu" + std::to_string(a)), h.find("gpu" + std::to_string(b)));
      EXPECT_EQ(p.type, PathType::kNvl) << a << "-" << b;
      EXPECT_EQ(p.bandwidth, 450) << a << "-" << b;
    }
  }
  EXPECT_EQ(type("gpu0", "gpu0"), PathType::kLoc);
  EXPECT_EQ(type("gpu0", "nic0"), PathType::kPix);  // same leaf switch
  EXPECT_EQ(type("gpu0", "nic1"), PathType::kPxb);  // leaf, upper, leaf
  EXPECT_EQ(type("gpu0", "nic2"), PathType::kPhb);  // through the CPU
  EXPECT_EQ(type("gpu0", "nic4"), PathType::kSys);  // the other socket
  EXPECT_EQ(type("gpu7", "nic7"), PathType::kPix);
  EXPECT_EQ(type("gpu0", "numa0"), PathType::kPhb);
  EXPECT_EQ(type("numa0", "numa1"), PathType::kSys);
  EXPECT_EQ(paths.get(h.find("gpu0"), h.find("nic0")).bandwidth, 48);  // PCIe Gen5 x16
  EXPECT_EQ(paths.get(h.find("gpu0"), h.find("nic0")).links.size(), 2u);
}

TEST(TopoPaths, DgxH100RankPaths) {
  const JobTopology job = load("dgx-h100.json");
  ASSERT_EQ(job.ranks.size(), 16u);
  JobPaths paths(job);
  RankPath intra = paths.between(0, 5);
  EXPECT_EQ(intra.type, PathType::kNvl);
  EXPECT_EQ(intra.linkClass, LinkClass::kNvlink);
  EXPECT_EQ(intra.bandwidth, 450);
  EXPECT_NEAR(intra.latencyUs, 0.6, 1e-9);

  RankPath inter = paths.between(3, 11);
  EXPECT_EQ(inter.type, PathType::kNet);
  EXPECT_EQ(inter.linkClass, LinkClass::kNetwork);
  // 400 Gb/s NDR is 50 GB/s; the GPU's PCIe Gen5 x16 leg (48 GB/s) is the bottleneck.
  EXPECT_EQ(inter.bandwidth, 48);
  // Each GPU uses the NIC on its own leaf switch (rail-aligned).
  EXPECT_EQ(job.hosts[0].nodes[inter.srcNic].id, "nic3");
  EXPECT_EQ(job.hosts[1].nodes[inter.dstNic].id, "nic3");
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(job.hosts[job.ranks[r].host].nodes[paths.nicOf(r)].id, "nic" + std::to_string(r % 8));
  }
  EXPECT_GT(inter.latencyUs, 1.0);  // fabric latency plus both PCIe legs
  EXPECT_EQ(paths.between(4, 4).type, PathType::kLoc);
  EXPECT_EQ(rankPath(job, 0, 8).type, PathType::kNet);
}

TEST(TopoPaths, DgxA100AndPcieSystems) {
  const JobTopology a100 = load("dgx-a100.json");
  EXPECT_EQ(rankPath(a100, 0, 7).bandwidth, 300);  // 12 x NVLink3
  EXPECT_EQ(rankPath(a100, 0, 8).bandwidth, 24);   // HDR 25 GB/s, PCIe Gen4 x16 24 GB/s

  const JobTopology pcie = load("pcie-4gpu-100g.json");
  JobPaths paths(pcie);
  EXPECT_EQ(paths.between(0, 1).type, PathType::kPix);
  EXPECT_EQ(paths.between(0, 1).linkClass, LinkClass::kPcie);
  EXPECT_EQ(paths.between(0, 1).bandwidth, 24);
  EXPECT_EQ(paths.between(0, 2).type, PathType::kPhb);
  EXPECT_EQ(paths.between(0, 4).type, PathType::kNet);
  EXPECT_EQ(paths.between(0, 4).bandwidth, 12.5);  // one 100 GbE NIC
  // All four GPUs share the single NIC.
  for (int r = 0; r < 4; ++r) EXPECT_EQ(paths.nicOf(r), pcie.hosts[0].find("nic0"));
}

TEST(TopoPaths, RoceWorkedCase) {
  const JobTopology job = load("roce25-2x2.json");
  JobPaths paths(job);
  EXPECT_EQ(paths.between(0, 1).type, PathType::kPhb);  // GPUs on two root ports of one CPU
  EXPECT_EQ(paths.between(0, 1).bandwidth, 12);         // PCIe Gen3 x16
  const RankPath net = paths.between(1, 2);
  EXPECT_EQ(net.type, PathType::kNet);
  EXPECT_EQ(net.bandwidth, 3.125);  // 25 Gb/s
  // REFERENCE.md: 102.4 MB at 3.125 GB/s is about 33 ms.
  EXPECT_NEAR(102.4e6 / (net.bandwidth * 1e9) * 1e3, 32.8, 0.1);
}

TEST(TopoPaths, CpuClusterRanks) {
  const JobTopology job = load("cpu-2node-1g.json");
  JobPaths paths(job);
  const RankPath local = paths.between(0, 1);
  EXPECT_EQ(local.type, PathType::kLoc);
  EXPECT_EQ(local.linkClass, LinkClass::kShm);
  EXPECT_EQ(local.bandwidth, linkClassDefaults(LinkClass::kShm).bandwidthGBs);
  const RankPath net = paths.between(1, 3);
  EXPECT_EQ(net.type, PathType::kNet);
  EXPECT_EQ(net.bandwidth, 0.125);  // 1 Gb/s
  EXPECT_GE(net.latencyUs, defaultNetLatencyUs(NetKind::kEthernet));
}

// A two-socket host built by hand: CPU ranks on different sockets go through SMP; an unbound CPU rank sits next to
// the GPU it talks to; a path that needs two PCIe switches is PXB.
TEST(TopoPaths, HandBuiltCorners) {
  HostTopology h;
  h.id = "h";
  auto add = [&h](NodeType t, const char* id, int parent) {
    Node n;
    n.type = t;
    n.id = id;
    n.parent = parent;
    return h.addNode(n);
  };
  const int pkg0 = add(NodeType::kPackage, "pkg0", 0);
  const int pkg1 = add(NodeType::kPackage, "pkg1", 0);
  const int numa0 = add(NodeType::kNuma, "numa0", pkg0);
  const int numa1 = add(NodeType::kNuma, "numa1", pkg1);
  const int sw0 = add(NodeType::kPciSwitch, "sw0", pkg0);
  const int sw1 = add(NodeType::kPciSwitch, "sw1", sw0);
  const int gpu0 = add(NodeType::kGpu, "gpu0", sw1);
  const int nic0 = add(NodeType::kNic, "nic0", sw0);
  const int gpu1 = add(NodeType::kGpu, "gpu1", pkg1);
  completeHost(h);
  EXPECT_GE(h.findLink(pkg0, pkg1, LinkType::kSmp), 0);  // added by completeHost
  HostPaths paths(h);
  EXPECT_EQ(paths.get(gpu0, nic0).type, PathType::kPxb);  // crosses sw1 and sw0
  EXPECT_EQ(paths.get(gpu0, gpu1).type, PathType::kSys);

  // One switch crossed: PIX; three: still PXB.
  const int nic1 = add(NodeType::kNic, "nic1", sw1);
  const int sw2 = add(NodeType::kPciSwitch, "sw2", sw0);
  const int gpu2 = add(NodeType::kGpu, "gpu2", sw2);
  completeHost(h);
  HostPaths paths2(h);
  EXPECT_EQ(paths2.get(gpu0, nic1).type, PathType::kPix);
  EXPECT_EQ(paths2.get(gpu0, gpu2).type, PathType::kPxb);

  JobTopology job;
  job.hosts.push_back(h);
  job.ranks = {{0, -1, numa0}, {0, -1, numa1}, {0, gpu0, -1}, {0, -1, -1}};
  JobPaths jp(job);
  EXPECT_EQ(jp.between(0, 1).type, PathType::kSys);
  EXPECT_EQ(jp.between(0, 1).linkClass, LinkClass::kSmp);
  EXPECT_EQ(jp.between(2, 0).type, PathType::kPhb);  // GPU to its socket's memory
  EXPECT_EQ(jp.between(2, 1).type, PathType::kSys);  // GPU to the other socket's memory
  EXPECT_EQ(jp.between(2, 3).type, PathType::kPhb);  // unbound CPU rank: nearest NUMA node
}

TEST(TopoPaths, NamesAndClasses) {
  EXPECT_STREQ(pathTypeName(PathType::kNvl), "NVL");
  EXPECT_STREQ(pathTypeName(PathType::kPxb), "PXB");
  EXPECT_EQ(linkClassOf(PathType::kPix), LinkClass::kPcie);
  EXPECT_EQ(linkClassOf(PathType::kSys), LinkClass::kSmp);
  EXPECT_EQ(linkClassOf(PathType::kLoc), LinkClass::kShm);
  EXPECT_EQ(linkClassDefaults(LinkClass::kNvlink).bandwidthGBs, 300);
  EXPECT_EQ(linkClassDefaults(LinkClass::kPcie).bandwidthGBs, 24);
  EXPECT_EQ(pcieBandwidth(4, 16), 24);
  EXPECT_EQ(pcieBandwidth(5, 8), 24);
  EXPECT_EQ(pcieBandwidth(3, 16), 12);
  EXPECT_NEAR(pcieBandwidthFromRaw(31.5077), 24, 1e-9);
  EXPECT_EQ(nvlinkBandwidth(4, 18), 450);
  EXPECT_EQ(nvlinkBandwidth(3, 12), 300);
  EXPECT_EQ(nvlinkVersionForSm(90), 4);
  EXPECT_EQ(pcieGenFromGts(16.0), 4);
  EXPECT_EQ(normalizeBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalizeBusId("1b:00.0"), "0000:1b:00.0");
}

TEST(TopoPaths, RendersTextAndDot) {
  const JobTopology job = load("dgx-h100.json");
  const std::string text = renderText(job);
  EXPECT_NE(text.find("gpu0  X     NVL"), std::string::npos) << text;
  EXPECT_NE(text.find("same hardware as host 0"), std::string::npos);
  EXPECT_NE(text.find("NVLink4 x18, 450 GB/s"), std::string::npos);
  const std::string dot = renderDot(job);
  EXPECT_EQ(dot.rfind("graph topology {", 0), 0u);
  EXPECT_NE(dot.find("subgraph cluster_h1"), std::string::npos);
  EXPECT_EQ(std::count(dot.begin(), dot.end(), '{'), std::count(dot.begin(), dot.end(), '}'));
  EXPECT_EQ(std::count(dot.begin(), dot.end(), '"') % 2, 0);
}

}  // namespace
}  // namespace tern::topo
