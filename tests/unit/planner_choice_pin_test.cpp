// The algorithm choices pinned: for a grid of collectives, sizes, rank counts and host layouts, the algorithm the
// library picks must stay what it was when the table below was recorded (before the catalogue refactor of issue 16,
// which was to move and re-wire code without changing any decision). A change of this table is a change of
// behaviour and must be deliberate: record it with
//   TERN_PIN_PRINT=1 TERN_SOURCE_DIR=$PWD build/bin/tern_unit_tests --gtest_filter='PlannerChoicePin.*'
// which prints the current choices as lines of planner_choice_pin_table.inc (kPinnedCostModel first, kPinnedShm
// second), and say in the commit which choices changed and why.
//
// Two halves:
//  - the cost model alone (chooseWithDirect without a direct path) on made-up host layouts and the reference
//    topologies, i.e. which schedule algorithm runs;
//  - real communicators of 2, 3 and 4 thread ranks on this host (shared memory), through ternQueryAlgorithm, i.e.
//    the whole decision including the shared-memory direct algorithms. The direct names are recorded by family
//    (shm_direct_small: the one-phase small-call algorithm; shm_direct: the chunked ones, whichever variant the
//    call's buffers then take), so a finer report of the variant does not read as a changed decision.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/algo_choice.hpp"
#include "planner/cluster_spec.hpp"
#include "planner/planner.hpp"
#include "rank_threads.hpp"
#include "tern/tern_ext.h"
#include "topo/topo_file.hpp"

namespace tern {
namespace {

namespace fs = std::filesystem;

bool printing() {
  const char* v = std::getenv("TERN_PIN_PRINT");
  return v != nullptr && *v == '1';
}

const Collective kCollectives[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                   Collective::kBroadcast, Collective::kReduce,    Collective::kAlltoAll,
                                   Collective::kBarrier};

const char* kCollectiveNames[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                  "reduce",    "alltoall",  "barrier"};

// Total sizes from 8 B to 256 MiB, a factor of 4 apart, plus a few just beside the shm one-phase limits.
std::vector<double> sizes() {
  std::vector<double> out;
  for (double b = 8; b <= 256.0 * 1024 * 1024; b *= 4) out.push_back(b);
  for (double b : {8.0 * 1024, 64.0 * 1024 - 4, 64.0 * 1024 + 4, 256.0 * 1024 - 4, 256.0 * 1024 + 4}) out.push_back(b);
  return out;
}

// Compares got with the pinned table (or prints it); every line is "key -> the algorithm of every size of sizes()".
void compareWithPinned(const std::map<std::string, std::string>& got, const char* const* pinned, size_t n,
                       const char* table) {
  if (printing()) {
    for (const auto& [k, v] : got) std::printf("      \"%s -> %s\",\n", k.c_str(), v.c_str());
    return;
  }
  std::map<std::string, std::string> want;
  for (size_t i = 0; i < n; ++i) {
    const std::string line = pinned[i];
    const size_t arrow = line.find(" -> ");
    ASSERT_NE(arrow, std::string::npos) << line;
    want.emplace(line.substr(0, arrow), line.substr(arrow + 4));
  }
  EXPECT_EQ(got.size(), want.size()) << table;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) {
      ADD_FAILURE() << table << ": no choice for " << k;
    } else {
      EXPECT_EQ(it->second, v) << table << ": " << k;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The cost model on host layouts and reference topologies

#include "planner_choice_pin_table.inc"

fs::path sourceDir() {
  if (const char* env = std::getenv("TERN_SOURCE_DIR")) return env;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

struct Layout {
  std::string name;
  std::shared_ptr<const planner::Planner> planner;
};

std::vector<Layout> layouts() {
  std::vector<Layout> out;
  // Ranks per host, for the made-up layouts (host ids only, as makeCommPlanner sees them without a topology).
  const std::vector<std::pair<const char*, std::vector<int>>> hostLayouts = {
      {"1x2", {2}},          {"1x3", {3}},
      {"1x4", {4}},          {"1x8", {8}},
      {"2x1", {1, 1}},       {"2x2", {2, 2}},
      {"2x4", {4, 4}},       {"4x2", {2, 2, 2, 2}},
      {"3x3", {3, 3, 3}},    {"8x1", {1, 1, 1, 1, 1, 1, 1, 1}},
      {"4x4", {4, 4, 4, 4}}, {"2x3+1", {3, 1}},
  };
  for (const auto& [name, perHost] : hostLayouts) {
    std::vector<std::string> hostIds;
    for (size_t h = 0; h < perHost.size(); ++h) {
      for (int k = 0; k < perHost[h]; ++k) hostIds.push_back("host" + std::to_string(h));
    }
    const int n = static_cast<int>(hostIds.size());
    for (bool shm : {true, false}) {
      out.push_back({std::string(name) + (shm ? " shm" : " tcp"), makeCommPlanner(n, hostIds, shm)});
    }
  }
  for (const char* file :
       {"cpu-2node-1g.json", "dgx-a100.json", "dgx-h100.json", "pcie-4gpu-100g.json", "roce25-2x2.json"}) {
    planner::PlannerConfig config;
    config.job =
        std::make_shared<const topo::JobTopology>(topo::loadTopologyFile((sourceDir() / "topo" / file).string()));
    out.push_back({file, std::make_shared<const planner::Planner>(config)});
  }
  return out;
}

TEST(PlannerChoicePin, CostModelChoicesAreUnchanged) {
  std::map<std::string, std::string> got;
  for (const Layout& l : layouts()) {
    ChoiceContext ctx;
    ctx.nranks = l.planner->nranks();
    ctx.planner = l.planner;
    for (size_t ci = 0; ci < std::size(kCollectives); ++ci) {
      for (ternDataType_t dt : {ternFloat32, ternBfloat16}) {
        if (dt == ternBfloat16 && kCollectives[ci] != Collective::kAllReduce) continue;  // element size: once
        std::string names;
        for (double bytes : sizes()) {
          const CollArgs args = planner::argsForBytes(kCollectives[ci], bytes, ctx.nranks, dt);
          names += (names.empty() ? "" : " ") + chooseWithDirect(args, ctx, AlgoOverride{}, DirectOption{}).name;
        }
        got[l.name + " " + kCollectiveNames[ci] + (dt == ternFloat32 ? " f32" : " bf16")] = names;
      }
    }
  }
  compareWithPinned(got, kPinnedCostModel, std::size(kPinnedCostModel), "cost model");
}

// ---------------------------------------------------------------------------------------------------------------
// Real shared-memory communicators

std::string family(const std::string& name) {
  if (name == "shm_small" || name == "shm_direct_small") return "shm_direct_small";
  if (name.rfind("shm_", 0) == 0) return "shm_direct";
  return name;
}

TEST(PlannerChoicePin, SharedMemoryCommunicatorChoicesAreUnchanged) {
  std::map<std::string, std::string> got;
  std::mutex mutex;
  for (int n : {2, 3, 4}) {
    testing::runOnRanks(n, testing::Wire::kTcp, [&](ternComm_t comm, int rank) {
      for (size_t ci = 0; ci < std::size(kCollectives); ++ci) {
        for (ternDataType_t dt : {ternFloat32, ternInt8}) {
          std::string names;
          for (double bytes : sizes()) {
            const CollArgs args = planner::argsForBytes(kCollectives[ci], bytes, n, dt);
            char name[64] = "";
            double us = 0;
            ASSERT_EQ(ternQueryAlgorithm(comm, kCollectiveNames[ci], args.count, dt, name, sizeof(name), &us),
                      ternSuccess)
                << ternGetLastError(comm);
            names += (names.empty() ? "" : " ") + family(name);
          }
          // Every rank decides alike (the schedules must match); rank 0's decisions are the ones recorded.
          std::lock_guard<std::mutex> lock(mutex);
          if (rank == 0)
            got["shm " + std::to_string(n) + " ranks " + kCollectiveNames[ci] + (dt == ternFloat32 ? " f32" : " i8")] =
                names;
        }
      }
    });
  }
  compareWithPinned(got, kPinnedShm, std::size(kPinnedShm), "shm communicators");
}

}  // namespace
}  // namespace tern
