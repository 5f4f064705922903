// Topology files: the reference systems in topo/, JSON round trips, NCCL and hwloc XML fixtures, and the errors
// malformed files give.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.hpp"
#include "topo/paths.hpp"
#include "topo/topo_file.hpp"
#include "topo/topo_json.hpp"

namespace tern::topo {
namespace {

namespace fs = std::filesystem;

// The source tree: tests/unit/ is two levels below it (TERN_SOURCE_DIR overrides, for out-of-tree test runs).
fs::path sourceDir() {
  if (const char* env = std::getenv("TERN_SOURCE_DIR")) return env;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string refFile(const char* name) { return (sourceDir() / "topo" / name).string(); }
std::string fixture(const char* name) { return (sourceDir() / "tests" / "data" / "topo" / name).string(); }

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "tern-topo-test-XXXXXX").string();
    path_ = mkdtemp(templ.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& content) const {
    std::string p = (fs::path(path_) / name).string();
    std::ofstream(p) << content;
    return p;
  }
  std::string path(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

// Loading `path` must fail with ternInvalidArgument and a message naming the file and containing `problem`.
void expectInvalid(const std::string& path, const std::string& problem) {
  try {
    loadTopologyFile(path);
    ADD_FAILURE() << path << " loaded, expected an error about: " << problem;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
  }
}

struct RefCase {
  const char* file;
  int hosts;
  int ranks;
  int gpusPerHost;
  int nicsPerHost;
  NetKind net;
  double speedGbps;
};

class ReferenceFileTest : public ::testing::TestWithParam<RefCase> {};

TEST_P(ReferenceFileTest, LoadsWithExpectedShape) {
  const RefCase& c = GetParam();
  JobTopology job = loadTopologyFile(refFile(c.file));
  ASSERT_EQ(static_cast<int>(job.hosts.size()), c.hosts);
  EXPECT_EQ(static_cast<int>(job.ranks.size()), c.ranks);
  for (const HostTopology& h : job.hosts) {
    EXPECT_EQ(h.count(NodeType::kGpu), c.gpusPerHost) << h.id;
    EXPECT_EQ(h.count(NodeType::kNic), c.nicsPerHost) << h.id;
    EXPECT_GE(h.count(NodeType::kPackage), 1);
    EXPECT_GE(h.count(NodeType::kNuma), 1);
  }
  EXPECT_EQ(job.network.kind, c.net);
  EXPECT_EQ(job.network.speedGbps, c.speedGbps);
  // Every pair of ranks is connected.
  JobPaths paths(job);
  for (int a = 0; a < static_cast<int>(job.ranks.size()); ++a) {
    for (int b = 0; b < static_cast<int>(job.ranks.size()); ++b) {
      RankPath p = paths.between(a, b);
      EXPECT_NE(p.type, PathType::kDis) << a << "->" << b;
      EXPECT_GT(p.bandwidth, 0) << a << "->" << b;
    }
  }
}

TEST_P(ReferenceFileTest, JsonRoundTripIsIdentity) {
  const JobTopology first = loadTopologyFile(refFile(GetParam().file));
  TempDir dir;
  const std::string out = dir.path("dump.json");
  writeTopologyFile(first, out);
  const JobTopology second = loadTopologyFile(out);
  EXPECT_EQ(first, second);
  // And text -> text is stable too.
  EXPECT_EQ(dumpJobJson(first), dumpJobJson(second));
}

INSTANTIATE_TEST_SUITE_P(TopoFiles, ReferenceFileTest,
                         ::testing::Values(RefCase{"dgx-a100.json", 2, 16, 8, 8, NetKind::kInfiniband, 200},
                                           RefCase{"dgx-h100.json", 2, 16, 8, 8, NetKind::kInfiniband, 400},
                                           RefCase{"pcie-4gpu-100g.json", 2, 8, 4, 1, NetKind::kRoce, 100},
                                           RefCase{"roce25-2x2.json", 2, 4, 2, 1, NetKind::kRoce, 25},
                                           RefCase{"cpu-2node-1g.json", 2, 4, 0, 1, NetKind::kEthernet, 1}),
                         [](const ::testing::TestParamInfo<RefCase>& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('.'));
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

TEST(TopoFiles, SniffsFormatByContent) {
  EXPECT_EQ(sniffTopoFormat("  \n{\"version\": 1}", "x"), TopoFormat::kJson);
  EXPECT_EQ(sniffTopoFormat("<?xml version=\"1.0\"?>\n<system version=\"1\"/>", "x"), TopoFormat::kNcclXml);
  EXPECT_EQ(sniffTopoFormat("<topology version=\"2.0\"></topology>", "x"), TopoFormat::kHwlocXml);
  EXPECT_THROW(sniffTopoFormat("<html/>", "x"), Error);
  EXPECT_THROW(sniffTopoFormat("version: 1", "x"), Error);
}

// A number no JSON number type can hold makes the parser throw out_of_range, not parse_error: it must still come
// out as tern's error naming the file (found by tests/fuzz/fuzz_topo_json).
TEST(TopoFiles, JsonNumberOverflowIsAnErrorNamingTheFile) {
  try {
    parseJobJson("{\"version\": 777E7777788}", "overflow.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overflow.json"), std::string::npos) << e.what();
  }
}

TEST(TopoFiles, NcclXmlFixture) {
  JobTopology job = loadTopologyFile(fixture("nccl-2socket.xml"));
  ASSERT_EQ(job.hosts.size(), 1u);
  const HostTopology& h = job.hosts[0];
  EXPECT_EQ(h.count(NodeType::kGpu), 4);
  EXPECT_EQ(h.count(NodeType::kNic), 2);
  EXPECT_EQ(h.count(NodeType::kNuma), 2);
  EXPECT_EQ(h.count(NodeType::kPackage), 2);
  EXPECT_EQ(h.count(NodeType::kPciSwitch), 2);
  // <gpu rank=...> became the placement.
  ASSERT_EQ(job.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(h.nodes[job.ranks[r].gpu].osIndex, r);

  const int gpu0 = h.find("gpu0"), gpu1 = h.find("gpu1"), gpu2 = h.find("gpu2"), gpu3 = h.find("gpu3");
  const int ib = h.find("nic0"), eth = h.find("nic1");
  EXPECT_EQ(h.nodes[ib].name, "mlx5_0");
  EXPECT_EQ(h.nodes[ib].netKind, NetKind::kInfiniband);
  EXPECT_EQ(h.nodes[ib].speedGbps, 100);
  EXPECT_TRUE(h.nodes[ib].gdr);
  EXPECT_EQ(h.nodes[eth].netKind, NetKind::kEthernet);
  EXPECT_EQ(h.nodes[eth].speedGbps, 10);

  HostPaths paths(h);
  EXPECT_EQ(paths.get(gpu0, gpu1).type, PathType::kNvl);
  EXPECT_EQ(paths.get(gpu0, gpu1).bandwidth, 50);  // 2 x NVLink2 (sm 70)
  EXPECT_EQ(paths.get(gpu2, gpu3).type, PathType::kPix);
  EXPECT_EQ(paths.get(gpu0, gpu2).type, PathType::kSys);
  EXPECT_EQ(paths.get(gpu0, ib).type, PathType::kPix);
  EXPECT_EQ(paths.get(gpu2, ib).type, PathType::kSys);
  EXPECT_EQ(paths.get(gpu2, eth).type, PathType::kPhb);
  EXPECT_EQ(paths.get(gpu0, ib).bandwidth, 12);  // PCIe Gen3 x16
}

// What hwloc would spend seconds and a gigabyte on (an OS index near 2^32 sizes its bitmaps; a PU without one is
// taken as 2^32 - 1) or recurse through is refused before hwloc sees it, naming the line.
TEST(TopoFiles, HwlocXmlBeyondItsBoundsIsRefusedBeforeImport) {
#ifndef TERN_HAVE_HWLOC
  GTEST_SKIP() << "built without hwloc";
#endif
  TempDir dir;
  const std::string head =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<topology version=\"2.0\">\n"
      "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" nodeset=\"0x1\">\n";
  const std::string tail = "</object>\n</topology>\n";
  expectInvalid(dir.write("huge.xml", head + "<object type=\"NUMANode\" os_index=\"4000000000\" nodeset=\"0x1\"/>\n" +
                                          "<object type=\"PU\" os_index=\"0\" cpuset=\"0x1\"/>\n" + tail),
                "line 4: os_index \"4000000000\" is not a number up to 1048576");
  expectInvalid(dir.write("noindex.xml", head + "<object type=\"NUMANode\" os_index=\"0\" nodeset=\"0x1\"/>\n" +
                                             "<object type=\"PU\" cpuset=\"0x1\"/>\n" + tail),
                "line 5: a PU object without an os_index");
  expectInvalid(dir.write("text.xml", head + "<object type=\"PU\" os_index=\"0x10\" cpuset=\"0x1\"/>\n" + tail),
                "os_index \"0x10\" is not a number");
  std::string deep = head;
  for (int i = 0; i < 200; ++i) deep += "<object type=\"Group\">\n";
  for (int i = 0; i < 200; ++i) deep += "</object>\n";
  expectInvalid(dir.write("deep.xml", deep + tail), "line 131: objects nested more than 128 deep");
}

TEST(TopoFiles, HwlocXmlFixture) {
#ifndef TERN_HAVE_HWLOC
  GTEST_SKIP() << "built without hwloc";
#endif
  JobTopology job = loadTopologyFile(fixture("hwloc-2socket.xml"));
  ASSERT_EQ(job.hosts.size(), 1u);
  const HostTopology& h = job.hosts[0];
  EXPECT_EQ(h.id, "fixture");
  EXPECT_EQ(h.count(NodeType::kPackage), 2);
  EXPECT_EQ(h.count(NodeType::kNuma), 2);
  EXPECT_EQ(h.count(NodeType::kGpu), 3);
  EXPECT_EQ(h.count(NodeType::kNic), 2);
  // Root port + upstream port + three downstream ports fold into one switch.
  EXPECT_EQ(h.count(NodeType::kPciSwitch), 1);
  EXPECT_EQ(h.totalCores(), 4);
  EXPECT_EQ(h.nodes[h.nodesOfType(NodeType::kNuma)[0]].memoryBytes, 4ull << 30);

  int ib = -1, eth = -1;
  for (int n : h.nodesOfType(NodeType::kNic)) (h.nodes[n].name == "mlx5_0" ? ib : eth) = n;
  ASSERT_GE(ib, 0);
  ASSERT_GE(eth, 0);
  EXPECT_EQ(h.nodes[ib].netKind, NetKind::kInfiniband);
  EXPECT_EQ(h.nodes[ib].netdev, "ib0");
  EXPECT_EQ(h.nodes[eth].netKind, NetKind::kEthernet);

  const std::vector<int> gpus = h.nodesOfType(NodeType::kGpu);
  EXPECT_EQ(h.nodes[gpus[0]].busId, "0000:03:00.0");
  HostPaths paths(h);
  EXPECT_EQ(paths.get(gpus[0], gpus[1]).type, PathType::kPix);
  EXPECT_EQ(paths.get(gpus[0], ib).type, PathType::kPix);
  EXPECT_EQ(paths.get(gpus[0], gpus[2]).type, PathType::kSys);
  EXPECT_EQ(paths.get(gpus[2], eth).type, PathType::kPhb);
  // hwloc's 63 GB/s raw Gen5 x16 link becomes the practical 48 GB/s.
  EXPECT_NEAR(paths.get(gpus[0], gpus[1]).bandwidth, 48, 0.1);
}

TEST(TopoFiles, CountExpandsHostIds) {
  JobTopology job = loadTopologyFile(refFile("roce25-2x2.json"));
  EXPECT_EQ(job.hosts[0].id, "roce25-0");
  EXPECT_EQ(job.hosts[1].id, "roce25-1");
  EXPECT_EQ(job.ranks[2].host, 1);
}

TEST(TopoFiles, RankListsAndDefaults) {
  TempDir dir;
  const std::string host =
      R"({"id": "n", "count": 2, "nodes": [{"id": "g0", "type": "gpu"}, {"id": "g1", "type": "gpu"}]})";
  // Explicit placements, hosts by index or id.
  JobTopology job = loadTopologyFile(dir.write(
      "a.json", R"({"version": 1, "hosts": [)" + host + R"(], "ranks": [{"host": 1, "gpu": "g1"}, {"host": "n-0"}]})"));
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[0].host, 1);
  EXPECT_EQ(job.hosts[1].nodes[job.ranks[0].gpu].id, "g1");
  EXPECT_EQ(job.ranks[1].host, 0);
  EXPECT_EQ(job.ranks[1].gpu, -1);
  // No ranks: one per GPU.
  job = loadTopologyFile(dir.write("b.json", R"({"version": 1, "hosts": [)" + host + "]}"));
  EXPECT_EQ(job.ranks.size(), 4u);
  // A minimal host gets a package, and its devices hang off it.
  EXPECT_EQ(job.hosts[0].count(NodeType::kPackage), 1);
  EXPECT_EQ(job.hosts[0].nodes[job.hosts[0].find("g0")].parent, job.hosts[0].find("pkg0"));
}

TEST(TopoFiles, MalformedFilesNameFileAndProblem) {
  TempDir dir;
  auto job = [](const std::string& hosts, const std::string& extra = "") {
    return R"({"version": 1, "hosts": [)" + hosts + "]" + extra + "}";
  };
  const std::string okHost = R"({"id": "h", "nodes": [{"id": "gpu0", "type": "gpu"}]})";

  expectInvalid(dir.path("missing.json"), "cannot open");
  expectInvalid(dir.write("empty.json", "  \n"), "empty file");
  expectInvalid(dir.write("text.txt", "hello"), "not a topology file");
  expectInvalid(dir.write("syntax.json", R"({"version": 1, "hosts": [)"), "invalid JSON");
  expectInvalid(dir.write("noversion.json", R"({"hosts": []})"), "missing \"version\"");
  expectInvalid(dir.write("future.json", R"({"version": 7, "hosts": []})"), "unsupported version 7");
  expectInvalid(dir.write("nohosts.json", R"({"version": 1, "hosts": []})"), "\"hosts\" must be a non-empty array");
  expectInvalid(dir.write("type.json", job(R"({"id": "h", "nodes": [{"id": "x", "type": "gpx"}]})")),
                "unknown type \"gpx\"");
  expectInvalid(dir.write("parent.json", job(R"({"id": "h", "nodes": [{"id": "x", "type": "gpu", "parent": "sw9"}]})")),
                "unknown parent \"sw9\"");
  expectInvalid(
      dir.write("dup.json", job(R"({"id": "h", "nodes": [{"id": "x", "type": "gpu"}, {"id": "x", "type": "nic"}]})")),
      "duplicate id");
  expectInvalid(dir.write("typo.json", job(R"({"id": "h", "nodes": [{"id": "n", "type": "nic", "speed_gpbs": 10}]})")),
                "unknown field \"speed_gpbs\"");
  expectInvalid(
      dir.write("speed.json", job(R"({"id": "h", "nodes": [{"id": "n", "type": "nic", "speed_gbps": "fast"}]})")),
      "\"speed_gbps\" must be a number");
  expectInvalid(dir.write("link.json", job(okHost.substr(0, okHost.size() - 1) +
                                           R"(, "links": [{"a": "gpu0", "b": "gpu9", "type": "nvlink"}]})")),
                "unknown node \"gpu9\"");
  expectInvalid(dir.write("rank.json", job(okHost, R"(, "ranks": [{"host": 0, "gpu": "nope"}])")),
                "\"nope\" is not a gpu");
  expectInvalid(dir.write("perhost.json", job(okHost, R"(, "ranks": {"per_host": 3, "bind": "gpu"})")), "has 1 GPUs");
  expectInvalid(dir.write("bad.xml", "<system><cpu></system>"), "XML parse error");
  expectInvalid(dir.write("root.xml", "<graph/>"), "neither NCCL's <system> nor hwloc's <topology>");
  expectInvalid(dir.write("sm.xml", R"(<system version="1"><cpu numaid="0" affinity="1">
      <pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="abc"/></pci></cpu></system>)"),
                "sm=\"abc\"");
  expectInvalid(dir.write("nvlink.xml", R"(<system version="1"><cpu numaid="0" affinity="1">
      <pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="80">
      <nvlink target="0000:09:00.0" count="4" tclass="0x030200"/></gpu></pci></cpu></system>)"),
                "no GPU with that busid");
  expectInvalid(dir.write("nocpu.xml", R"(<system version="1"></system>)"), "no <cpu>");
  expectInvalid(dir.write("hwloc.xml", R"(<topology version="2.0"><object type="Bogus"/></topology>)"), "hwloc");
}

TEST(TopoFiles, WriteFailureIsSystemError) {
  JobTopology job = loadTopologyFile(refFile("roce25-2x2.json"));
  try {
    writeTopologyFile(job, "/nonexistent-dir/x.json");
    ADD_FAILURE() << "write to a missing directory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternSystemError);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace tern::topo
