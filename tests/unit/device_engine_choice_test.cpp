// The engine of uncompressed stream-ordered calls on device buffers, priced by the cost model
// (core/device_engine_choice.hpp): NCCL over the GPUs' own links against staging through pinned host memory, on the
// reference topologies; and communicators whose ranks drive GPUs (their current device, posed by the host_streams.hpp
// double here) place them on those GPUs in the job, while host-memory calls stay priced as CPU ranks'.
#include "core/device_engine_choice.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/env.hpp"
#include "common/communicator_threads.hpp"
#include "common/host_streams.hpp"
#include "core/algo_choice.hpp"
#include "core/communicator.hpp"
#include "planner/calibration.hpp"
#include "planner/planner.hpp"
#include "topo/topo_file.hpp"

namespace tern::testing {
namespace {

namespace fs = std::filesystem;

std::string referenceTopology(const char* name) {
  const char* env = std::getenv("TERN_SOURCE_DIR");
  const fs::path root = env != nullptr ? fs::path(env) : fs::path(__FILE__).parent_path().parent_path().parent_path();
  return (root / "topo" / name).string();
}

std::shared_ptr<const topo::JobTopology> loadJob(const char* name) {
  return std::make_shared<const topo::JobTopology>(topo::loadTopologyFile(referenceTopology(name)));
}

std::vector<std::string> hostIdsOf(const topo::JobTopology& job) {
  std::vector<std::string> ids;
  for (const topo::RankPlacement& p : job.ranks) ids.push_back(job.hosts[p.host].id);
  return ids;
}

CollArgs allReduceOf(double bytes, int nranks) {
  return planner::argsForBytes(Collective::kAllReduce, bytes, nranks, ternFloat32);
}

// On GPUs joined by NVLink (a DGX H100) or by PCIe switches, NCCL on the GPUs' links beats copying every buffer to
// host memory and back, at every size; staging pays at least its two copies on top of the host collective.
TEST(DeviceEngineChoice, NcclBeatsStagingOnTheGpusOwnLinks) {
  for (const char* file : {"dgx-h100.json", "pcie-4gpu-100g.json"}) {
    SCOPED_TRACE(file);
    const auto job = loadJob(file);
    const int n = static_cast<int>(job->ranks.size());
    ASSERT_GE(job->ranks.at(0).gpu, 0) << "the reference topology binds its ranks to GPUs";
    const auto device = makeDevicePlanner(job);
    ASSERT_NE(device, nullptr);
    const auto host = makeCommPlanner(n, hostIdsOf(*job), true, job);
    for (const double bytes : {1024.0, 65536.0, 4.0 * (1 << 20), 256.0 * (1 << 20)}) {
      SCOPED_TRACE(bytes);
      const CollArgs args = allReduceOf(bytes, n);
      const planner::Estimate hostBest = host->rank(Collective::kAllReduce, bytes).front();
      ASSERT_TRUE(hostBest.error.empty()) << hostBest.error;
      const std::vector<DeviceEngineEstimate> ranked =
          rankDeviceEngines(args, n, *job, device.get(), hostBest.algorithm, hostBest.seconds);
      ASSERT_EQ(ranked.size(), 2u);
      EXPECT_EQ(ranked[0].engine, "nccl");
      EXPECT_GT(ranked[0].seconds, 0);
      EXPECT_EQ(ranked[1].engine, "staged");
      EXPECT_EQ(ranked[1].algorithm, hostBest.algorithm);
      const double copies = 2 * deviceHostCopySeconds(*job, 0, bytes);
      EXPECT_GE(ranked[1].seconds, hostBest.seconds + copies);
    }
  }
}

// The host copies go over the GPU's PCIe path (a DGX H100's Gen5 x16 is faster than the default Gen4 figure); a rank
// the job does not place on a GPU is priced at that default.
TEST(DeviceEngineChoice, HostCopiesGoOverTheGpusPcie) {
  const auto dgx = loadJob("dgx-h100.json");
  const double bytes = 64.0 * (1 << 20);
  const double gpuCopy = deviceHostCopySeconds(*dgx, 0, bytes);
  EXPECT_LT(gpuCopy, bytes / (kDefaultHostCopyGBs * 1e9));
  EXPECT_GT(gpuCopy, bytes / (128e9));  // no PCIe x16 link is faster than Gen6's
  const auto cpu = loadJob("cpu-2node-1g.json");
  EXPECT_DOUBLE_EQ(deviceHostCopySeconds(*cpu, 0, bytes), bytes / (kDefaultHostCopyGBs * 1e9));
}

// The choice follows the prices, not a rule: where the model is told the GPUs' links are slow, staging wins; where
// the job places no rank on a GPU, NCCL is not priced (and ranks after the priced engine).
TEST(DeviceEngineChoice, TheCheaperEngineWins) {
  const auto job = loadJob("dgx-h100.json");
  const int n = static_cast<int>(job->ranks.size());
  planner::PlannerConfig config;
  config.job = job;
  config.intra = planner::IntraTransport::kTopology;
  config.params = planner::defaultCostParams();
  config.params.links["nvlink"] = planner::LinkCalibration{{1e-3, 1e-6}, -1, {}};  // 1 ms, 1 MB/s
  const planner::Planner slowGpuLinks(config);
  const CollArgs args = allReduceOf(1 << 20, n);
  std::vector<DeviceEngineEstimate> ranked = rankDeviceEngines(args, n, *job, &slowGpuLinks, "ring", 200e-6);
  EXPECT_EQ(ranked[0].engine, "staged");
  EXPECT_GT(ranked[1].seconds, ranked[0].seconds);

  ranked = rankDeviceEngines(args, n, *job, nullptr, "ring", 200e-6);
  EXPECT_EQ(ranked[0].engine, "staged");
  EXPECT_EQ(ranked[1].engine, "nccl");
  EXPECT_LT(ranked[1].seconds, 0);
  // Batches of sends and receives have no catalogue entry: NCCL stays unpriced there too.
  CollArgs batch;
  batch.coll = Collective::kAlltoAllv;
  ranked = rankDeviceEngines(batch, n, *job, makeDevicePlanner(job).get(), "", 0);
  EXPECT_LT(ranked[0].seconds, 0);
  EXPECT_LT(ranked[1].seconds, 0);
}

// fn(rank) on a thread per rank, all at once (a vote is an all-gather).
void onEveryRank(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

// Communicators of kRanks ranks whose threads drive GPUs 0, 2, 4 ... of a reference box (the host_streams double
// poses each thread's current device, as cudaSetDevice would make it current), or none; the double is the process's
// device streams while this lives.
class GpuRanks {
 public:
  static constexpr int kRanks = 3;
  explicit GpuRanks(const std::string& file)
      : reference_(topo::loadTopologyFile(file)), gpus_(box().nodesOfType(topo::NodeType::kGpu)) {
    setDeviceStreamsForTesting(&streams_);
  }
  ~GpuRanks() { setDeviceStreamsForTesting(nullptr); }
  GpuRanks(const GpuRanks&) = delete;
  GpuRanks& operator=(const GpuRanks&) = delete;
  // The box's node index of the GPU rank r drives.
  int gpuOf(int r) const { return gpus_.at(2 * static_cast<size_t>(r)); }
  std::vector<std::unique_ptr<Communicator>> create(bool inproc, bool onGpus) {
    return createCommunicators(kRanks, inproc,
                               [&](int r) { streams_.setCurrentDevice(onGpus ? box().nodes[gpuOf(r)].busId : ""); });
  }

 private:
  const topo::HostTopology& box() const { return reference_.hosts.at(0); }
  HostStreams streams_;
  topo::JobTopology reference_;
  std::vector<int> gpus_;
};

// Ranks whose threads have a current CUDA device (the double's setCurrentDevice) sit on that GPU in every rank's
// job; the host-memory calls of those communicators are priced exactly as those of ranks without a GPU.
TEST(DeviceEngineChoice, RanksDrivingGpusSitOnThemAndHostCallsStayCpuPriced) {
  const std::string file = referenceTopology("dgx-h100.json");
  setenv("TERN_TOPO_FILE", file.c_str(), 1);
  if (knobs().topoFile != file) {
    GTEST_SKIP() << "the knobs were read before TERN_TOPO_FILE was set: run this test in a process of its own "
                    "(ctest does)";
  }
  GpuRanks ranks(file);
  const int n = GpuRanks::kRanks;
  for (const bool inproc : {true, false}) {
    SCOPED_TRACE(inproc ? "inproc" : "tcp");
    std::vector<double> hostPrediction[2];
    for (const bool onGpus : {true, false}) {
      std::vector<std::unique_ptr<Communicator>> comms = ranks.create(inproc, onGpus);
      for (int r = 0; r < n; ++r) ASSERT_NE(comms[r], nullptr);
      for (int r = 0; r < n; ++r) {
        const topo::JobTopology& job = comms[r]->jobTopology();
        EXPECT_EQ(job, comms[0]->jobTopology()) << "rank " << r;
        for (int q = 0; q < n; ++q) {
          EXPECT_EQ(job.ranks[q].gpu, onGpus ? ranks.gpuOf(q) : -1) << "rank " << r << " sees rank " << q;
        }
      }
      const CollArgs args = allReduceOf(4 << 20, n);
      for (int r = 0; r < n; ++r) {
        const Choice choice = comms[r]->choose(args);
        hostPrediction[onGpus ? 0 : 1].push_back(comms[r]->predictSeconds(args, choice));
        EXPECT_TRUE(comms[r]->ncclPreferred(args)) << "rank " << r;  // priced on the GPUs, or the prior without them
        // Nothing to vote on: NCCL is down, and the call is not one TERN_COMPRESS compresses.
        const Communicator::DevicePlan plain = comms[r]->devicePlan(allReduceOf(2 << 20, n), false, false, false);
        EXPECT_FALSE(plain.nccl || plain.compress) << "rank " << r;
      }
      destroyCommunicators(comms);
    }
    EXPECT_EQ(hostPrediction[0], hostPrediction[1]);
  }
}

// The ranks vote on the plan of each stream-ordered call shape (Communicator::devicePlan): the engine of rank 0's
// model (here one told that NVLink is slow, so staging wins where the ranks sit on GPUs, while without GPUs NCCL is
// unpriced and runs without a vote), compression only where every rank can compress on the device; the shape's later
// calls keep the plan (one host: every model is settled). The engine decision, once per communicator, also agrees
// whether every rank has device codecs.
TEST(DeviceEngineChoice, RanksVoteOnEachShapesPlan) {
  const std::string file = referenceTopology("dgx-h100.json");
  const std::string tune = (fs::temp_directory_path() / ("tern-slow-nvlink-" + std::to_string(getpid()) + ".json"));
  {
    std::ofstream out(tune);
    out << R"({"version": 1, "links": {"nvlink": {"alpha_us": 1000, "bandwidth_gbs": 0.001}}})";
  }
  setenv("TERN_TOPO_FILE", file.c_str(), 1);
  setenv("TERN_TUNE_FILE", tune.c_str(), 1);
  setenv("TERN_COMPRESS", "bf16", 1);
  setenv("TERN_COMPRESS_WHEN", "always", 1);
  const bool fresh = knobs().topoFile == file && knobs().compressAlways &&
                     planner::processCostParams().find(planner::ModelLink::kNvlink) != nullptr;
  fs::remove(tune);
  if (!fresh) {
    GTEST_SKIP() << "the knobs or the cost parameters were read before this test set them: run it in a process of "
                    "its own (ctest does)";
  }
  GpuRanks ranks(file);
  const int n = GpuRanks::kRanks;
  for (const bool inproc : {true, false}) {
    SCOPED_TRACE(inproc ? "inproc" : "tcp");
    for (const bool onGpus : {true, false}) {
      SCOPED_TRACE(onGpus ? "on GPUs" : "without GPUs");
      std::vector<std::unique_ptr<Communicator>> comms = ranks.create(inproc, onGpus);
      for (int r = 0; r < n; ++r) ASSERT_NE(comms[r], nullptr);
      // Rank 1 has no device codecs where the ranks are not on GPUs.
      std::vector<HostStreams> rankStreams(n);
      for (int r = 0; r < n; ++r) rankStreams[r].withCodecs = onGpus || r != 1;
      onEveryRank(n, [&](int r) { EXPECT_EQ(comms[r]->ncclEngine(rankStreams[r]), nullptr); });  // doubles: no NCCL
      for (int r = 0; r < n; ++r) EXPECT_EQ(comms[r]->deviceCodecsEverywhere(), onGpus) << "rank " << r;

      const CollArgs plain = allReduceOf(4 << 20, n), shared = allReduceOf(1 << 20, n), split = allReduceOf(2 << 20, n);
      // [call][rank]: an uncompressible shape with NCCL up (as ncclEngine would have it on GPUs), a compressible one
      // whose buffers every rank has on the device, and one whose buffers rank 1 has on the host.
      std::vector<Communicator::DevicePlan> plains(2 * n), shareds(2 * n), splits(2 * n);
      onEveryRank(n, [&](int r) {
        const bool compressible = comms[r]->deviceCodecsEverywhere();  // as launchOnStream asks it
        for (int call = 0; call < 2; ++call) {
          plains[call * n + r] = comms[r]->devicePlan(plain, false, false, true);
          shareds[call * n + r] = comms[r]->devicePlan(shared, compressible, true, false);
          splits[call * n + r] = comms[r]->devicePlan(split, compressible, r != 1, false);
        }
      });
      for (int i = 0; i < 2 * n; ++i) {
        const int r = i % n;
        SCOPED_TRACE("rank " + std::to_string(r) + ", call " + std::to_string(i / n + 1));
        EXPECT_EQ(plains[i].nccl, !onGpus);  // slow NVLink: staging wins; without GPUs NCCL is unpriced
        EXPECT_FALSE(plains[i].compress);
        EXPECT_EQ(shareds[i].compress, onGpus);  // TERN_COMPRESS_WHEN=always where every rank has device codecs
        EXPECT_FALSE(shareds[i].hierarchical);   // one host
        EXPECT_FALSE(shareds[i].nccl);
        EXPECT_FALSE(splits[i].compress);  // rank 1's buffers are not on the device
      }
      destroyCommunicators(comms);
    }
  }
}

}  // namespace
}  // namespace tern::testing
