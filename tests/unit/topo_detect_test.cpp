// Detection on this machine, host ids, the TERN_TOPO_FILE / TERN_TOPO_DUMP_FILE knobs, and assembling a job from
// per-rank reports.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "base/error.hpp"
#include "topo/assemble.hpp"
#include "topo/detect.hpp"
#include "topo/host_id.hpp"
#include "topo/nvml.hpp"
#include "topo/paths.hpp"
#include "topo/topo_file.hpp"
#include "topo/topo_json.hpp"

namespace tern::topo {
namespace {

namespace fs = std::filesystem;

fs::path sourceDir() {
  if (const char* env = std::getenv("TERN_SOURCE_DIR")) return env;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

// Sets an environment variable for the scope of a test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Physical cores as the kernel reports them: distinct (package, core) pairs over the online CPUs.
int kernelCoreCount() {
  std::set<std::pair<std::string, std::string>> cores;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long cpu = 0; cpu < 1024 && static_cast<long>(cores.size()) < n + 1; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pkg(dir + "physical_package_id"), core(dir + "core_id");
    std::string p, c;
    if (pkg >> p && core >> c) cores.insert({p, c});
  }
  return static_cast<int>(cores.size());
}

TEST(TopoDetect, ThisMachine) {
  const HostTopology host = detectHost();
  EXPECT_GE(host.count(NodeType::kPackage), 1);
  EXPECT_GE(host.count(NodeType::kNuma), 1);
  EXPECT_EQ(host.totalPus(), sysconf(_SC_NPROCESSORS_ONLN));
  const int kernelCores = kernelCoreCount();
  if (kernelCores > 0) {
    EXPECT_EQ(host.totalCores(), kernelCores);
  }
  EXPECT_GE(host.totalCores(), 1);
  EXPECT_LE(host.totalCores(), host.totalPus());
  uint64_t memory = 0;
  for (int n : host.nodesOfType(NodeType::kNuma)) memory += host.nodes[n].memoryBytes;
  EXPECT_GT(memory, 0u);
  EXPECT_EQ(host.id, hostId());
  EXPECT_EQ(host.hostname, hostName());
  // Whatever was found is consistent and every device reaches every other.
  JobTopology job = singleHostJob(host);
  EXPECT_NO_THROW(validate(job, "detected"));
  HostPaths paths(host);
  for (int a : host.nodesOfType(NodeType::kNic)) {
    for (int b : host.nodesOfType(NodeType::kNuma)) EXPECT_NE(paths.get(a, b).type, PathType::kDis);
  }
  // Detection survives a JSON round trip unchanged.
  EXPECT_EQ(parseJobJson(dumpJobJson(job), "dump"), job);
}

// Whether this process can load and initialise NVML, found out here without tern's loader (topo/nvml.cpp).
bool nvmlLoadsHere() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  using Init = int (*)();
  const auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
  return init != nullptr && init() == 0;  // NVML_SUCCESS; the library stays loaded, as tern's does
}

// NVML is optional: where it cannot be loaded (no driver, as on the CI machines) addNvmlInfo reports that and
// changes nothing, even on a host full of GPUs; where it can, it says so and detection has used it: every GPU found
// on this machine carries NVML's compute capability and memory, which PCI detection alone never knows.
TEST(TopoDetect, NvmlIsOptional) {
  const bool available = nvmlLoadsHere();
  // Eight GPUs (with NVLinks and an NVSwitch) from a topology file: their bus ids are not this machine's, so even
  // a working NVML finds none of them and must leave every field as it was.
  const JobTopology file = loadTopologyFile((sourceDir() / "topo" / "dgx-h100.json").string());
  ASSERT_FALSE(file.hosts.empty());
  HostTopology host = file.hosts[0];
  ASSERT_EQ(host.count(NodeType::kGpu), 8);
  bool added = !available;
  EXPECT_NO_THROW(added = addNvmlInfo(host));
  EXPECT_EQ(added, available) << "NVML " << (available ? "loads" : "does not load") << " in this process";
  EXPECT_EQ(host, file.hosts[0]);

  const HostTopology detected = detectHost();
  HostTopology again = detected;
  EXPECT_NO_THROW(added = addNvmlInfo(again));
  EXPECT_EQ(added, available);
  for (int g : detected.nodesOfType(NodeType::kGpu)) {
    const Node& gpu = detected.nodes[g];
    if (available) {
      EXPECT_GT(gpu.sm, 0) << gpu.id << ": detection did not take NVML's compute capability";
      EXPECT_GT(gpu.memoryBytes, 0u) << gpu.id;
      EXPECT_EQ(gpu.name.rfind("NVIDIA GPU [", 0), std::string::npos) << gpu.id << " kept its PCI name " << gpu.name;
    } else {
      EXPECT_EQ(gpu.sm, 0) << gpu.id << ": a compute capability without NVML";
    }
  }
  if (!available) {
    EXPECT_EQ(again, detected);
  }
  EXPECT_EQ(again.count(NodeType::kGpu), detected.count(NodeType::kGpu));
}

TEST(TopoDetect, HostIdOverride) {
  {
    ScopedEnv env(kHostIdEnv, "node-a");
    EXPECT_EQ(hostId(), "node-a");
    EXPECT_EQ(detectHost().id, "node-a");
  }
  {
    ScopedEnv env(kHostIdEnv, "");  // empty means unset
    const std::string id = hostId();
    EXPECT_EQ(id.rfind(hostName(), 0), 0u) << id;
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string bootId;
    if (std::getline(boot, bootId)) {
      EXPECT_EQ(id, hostName() + ":" + bootId);
    }
  }
}

TEST(TopoDetect, TopoFileAndDumpFile) {
  const std::string dir = (fs::temp_directory_path() / ("tern-topo-env-" + std::to_string(getpid()))).string();
  fs::create_directories(dir);
  {
    // TERN_TOPO_FILE replaces detection; a host id the file knows picks that host.
    ScopedEnv file(kTopoFileEnv, (sourceDir() / "topo" / "dgx-h100.json").string());
    ScopedEnv id(kHostIdEnv, "dgx-h100-1");
    ScopedEnv dump(kTopoDumpFileEnv, dir + "/dump-%h-%p.json");
    HostTopology host = localHostTopology();
    EXPECT_EQ(host.id, "dgx-h100-1");
    EXPECT_EQ(host.count(NodeType::kGpu), 8);
    // The dump file name was expanded and holds the same host.
    const std::string dumped = dir + "/dump-" + hostName() + "-" + std::to_string(getpid()) + ".json";
    ASSERT_TRUE(fs::exists(dumped)) << dumped;
    JobTopology job = loadTopologyFile(dumped);
    ASSERT_EQ(job.hosts.size(), 1u);
    EXPECT_EQ(job.hosts[0], host);
  }
  {
    // A host id the file does not know: the first host, renamed to this machine's id.
    ScopedEnv file(kTopoFileEnv, (sourceDir() / "topo" / "roce25-2x2.json").string());
    ScopedEnv id(kHostIdEnv, "elsewhere");
    HostTopology host = localHostTopology();
    EXPECT_EQ(host.id, "elsewhere");
    EXPECT_EQ(host.count(NodeType::kGpu), 2);
  }
  {
    ScopedEnv file(kTopoFileEnv, dir + "/missing.json");
    try {
      localHostTopology();
      ADD_FAILURE() << "missing TERN_TOPO_FILE loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ternInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos);
    }
  }
  fs::remove_all(dir);
  EXPECT_EQ(expandFileName("a%%b%x"), "a%b%x");
}

TEST(TopoDetect, AssembleJobFromReports) {
  const JobTopology ref = loadTopologyFile((sourceDir() / "topo" / "dgx-h100.json").string());
  // 4 ranks: two per host, exchanged as strings the way communicator init does.
  std::vector<std::string> wire;
  for (int h = 0; h < 2; ++h) {
    for (int g : {0, 5}) {
      const HostTopology& host = ref.hosts[h];
      RankReport r{host, host.nodes[host.find("gpu" + std::to_string(g))].busId, -1};
      wire.push_back(encodeRankReport(r));
    }
  }
  std::vector<RankReport> reports;
  for (size_t r = 0; r < wire.size(); ++r) reports.push_back(decodeRankReport(wire[r], static_cast<int>(r)));
  const JobTopology job = assembleJob(reports);
  ASSERT_EQ(job.hosts.size(), 2u);
  EXPECT_EQ(job.hosts[0], ref.hosts[0]);
  EXPECT_EQ(job.ranks[1].host, 0);
  EXPECT_EQ(job.ranks[2].host, 1);
  EXPECT_EQ(job.hosts[1].nodes[job.ranks[3].gpu].id, "gpu5");
  EXPECT_EQ(job.network.kind, NetKind::kInfiniband);
  EXPECT_EQ(job.network.speedGbps, 400);
  JobPaths paths(job);
  EXPECT_EQ(paths.between(0, 1).type, PathType::kNvl);
  EXPECT_EQ(paths.between(1, 3).type, PathType::kNet);

  // A GPU the host does not have, and a garbled report.
  reports[0].gpuBusId = "0000:ee:00.0";
  EXPECT_THROW(assembleJob(reports), Error);
  try {
    decodeRankReport("{not json", 3);
    ADD_FAILURE() << "garbled report decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos);
  }
}

TEST(TopoDetect, LocalRankReportOnThisMachine) {
  ScopedEnv id(kHostIdEnv, "self");
  const RankReport r = localRankReport("", 0);
  const JobTopology job = assembleJob({r, r});
  ASSERT_EQ(job.hosts.size(), 1u);
  EXPECT_EQ(job.hosts[0].id, "self");
  EXPECT_EQ(rankPath(job, 0, 1).linkClass, LinkClass::kShm);
}

}  // namespace
}  // namespace tern::topo
