// The one catalogue (algorithms/registry.hpp): every algorithm of every family is listed once per collective with
// what its family needs (a builder, or an applicability and a cost), TERN_ALGO knows exactly the selectable ones,
// forced shared-memory entries become direct choices or clear errors, and one set of cost parameters prices the
// shared-memory entries (defaults as documented, a tune file refines them).
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "algorithms/compressed.hpp"
#include "algorithms/registry.hpp"
#include "base/error.hpp"
#include "compress/codec_factory.hpp"
#include "core/algo_choice.hpp"
#include "planner/calibration.hpp"
#include "planner/planner.hpp"

namespace tern {
namespace {

ternResult_t codeOf(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message != nullptr) *message = e.what();
    return e.code();
  }
  return ternSuccess;
}

TEST(RegistryCatalogue, EveryNameOncePerCollectiveWithWhatItsFamilyNeeds) {
  std::set<std::pair<int, std::string>> seen;
  size_t schedule = 0;
  for (const AlgorithmInfo& a : catalogue()) {
    EXPECT_TRUE(seen.insert({static_cast<int>(a.collective), a.name}).second) << "listed twice: " << a.name;
    EXPECT_EQ(findEntry(a.collective, a.name), &a);
    ASSERT_NE(a.description, nullptr);
    EXPECT_GT(std::string(a.description).size(), 10u) << a.name;
    switch (a.family) {
      case AlgorithmFamily::kSchedule:
        ++schedule;
        EXPECT_NE(a.build, nullptr) << a.name;
        EXPECT_EQ(findAlgorithm(a.collective, a.name), &a);
        break;
      case AlgorithmFamily::kSharedMemory:
        EXPECT_EQ(a.build, nullptr) << a.name;
        EXPECT_NE(a.applies, nullptr) << a.name;
        EXPECT_NE(a.cost, nullptr) << a.name;
        EXPECT_EQ(findAlgorithm(a.collective, a.name), nullptr) << a.name << ": not a schedule";
        break;
      case AlgorithmFamily::kCompressed:
        EXPECT_NE(a.build, nullptr) << a.name;
        EXPECT_EQ(findAlgorithm(a.collective, a.name), nullptr) << a.name << ": not chosen by the cost model";
        break;
    }
  }
  // algorithms() is the schedule-built part, in the same order.
  ASSERT_EQ(algorithms().size(), schedule);
  for (size_t i = 0; i < schedule; ++i) EXPECT_EQ(&algorithms()[i], &catalogue()[i]);

  // The shared-memory entries, per collective: every form the direct collectives have.
  const std::vector<std::pair<Collective, std::set<std::string>>> shm = {
      {Collective::kAllReduce, {"shm_small", "shm_pipelined", "shm_cma", "shm_mapped"}},
      {Collective::kAllGather, {"shm_small", "shm_pipelined", "shm_cma"}},
      {Collective::kReduceScatter, {"shm_small", "shm_pipelined", "shm_cma"}},
      {Collective::kBroadcast, {"shm_small", "shm_pipelined", "shm_cma"}},
      {Collective::kReduce, {"shm_small", "shm_pipelined", "shm_cma"}},
      {Collective::kBarrier, {"shm_small"}},
      {Collective::kAlltoAll, {"shm_small", "shm_pipelined", "shm_cma", "shm_mapped"}},
      {Collective::kAlltoAllv, {"shm_small", "shm_pipelined", "shm_cma", "shm_mapped"}},
  };
  for (const auto& [coll, names] : shm) {
    std::set<std::string> got;
    for (const AlgorithmInfo& a : catalogue()) {
      if (a.collective == coll && a.family == AlgorithmFamily::kSharedMemory) got.insert(a.name);
    }
    EXPECT_EQ(got, names) << collectiveName(coll);
  }
}

TEST(RegistryCatalogue, CompressedAlgorithmsThatRunAreEntries) {
  for (const char* spec : {"sign", "qsgd:4", "bf16", "topk:0.01"}) {
    const auto codec = compress::makeCodec(spec);
    for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
      for (bool hier : {false, true}) {
        const std::string name = compressedAlgorithmFor(c, *codec, hier);
        const AlgorithmInfo* a = findEntry(c, name);
        ASSERT_NE(a, nullptr) << spec << " " << collectiveName(c) << " " << name;
        EXPECT_EQ(a->family, AlgorithmFamily::kCompressed) << name;
      }
    }
  }
}

TEST(RegistryCatalogue, AlgoOverrideKnowsTheSelectableEntries) {
  EXPECT_EQ(AlgoOverride::parse("shm_cma").forced(Collective::kAllReduce), "shm_cma");
  EXPECT_EQ(AlgoOverride::parse("shm_cma").forced(Collective::kReduceScatter), "shm_cma");
  EXPECT_EQ(AlgoOverride::parse("shm_mapped").forced(Collective::kBroadcast), "");  // no such form: not forced
  EXPECT_EQ(AlgoOverride::parse("allreduce:shm_small;allgather:ring").forced(Collective::kAllReduce), "shm_small");
  EXPECT_EQ(AlgoOverride::parse("allreduce:shm_small;allgather:ring").forced(Collective::kAllGather), "ring");
  EXPECT_TRUE(AlgoOverride::parse("^shm_mapped").excluded(Collective::kAllReduce, "shm_mapped"));
  std::string message;
  EXPECT_EQ(codeOf([] { AlgoOverride::parse("broadcast:shm_mapped"); }, &message), ternInvalidArgument);
  EXPECT_NE(message.find("unknown algorithm 'shm_mapped'"), std::string::npos) << message;
  EXPECT_EQ(codeOf([] { AlgoOverride::parse("compressed_2phase"); }, &message), ternInvalidArgument);
  EXPECT_NE(message.find("TERN_COMPRESS"), std::string::npos) << message;
}

TEST(RegistryCatalogue, ForcedSharedMemoryEntriesAreDirectChoicesOrErrors) {
  ChoiceContext ctx;
  ctx.nranks = 2;
  ctx.hostOf = {0, 0};
  CollArgs args;
  args.coll = Collective::kAllReduce;
  args.count = 1024;
  args.dtype = ternFloat32;
  const AlgoOverride forced = AlgoOverride::parse("shm_pipelined");
  const DirectOption same{"shm_pipelined", [](const CollArgs&) { return 1e-3; }};
  const Choice c = chooseWithDirect(args, ctx, forced, same);
  EXPECT_TRUE(c.direct);
  EXPECT_TRUE(c.forced);
  EXPECT_EQ(c.name, "shm_pipelined");
  EXPECT_EQ(c.info, nullptr);
  std::string message;
  EXPECT_EQ(codeOf([&] { chooseWithDirect(args, ctx, forced, DirectOption{}); }, &message), ternInvalidUsage);
  EXPECT_NE(message.find("on one host"), std::string::npos) << message;
  const DirectOption other{"shm_small", [](const CollArgs&) { return 1e-6; }};
  EXPECT_EQ(codeOf([&] { chooseWithDirect(args, ctx, forced, other); }, &message), ternInvalidUsage);
  EXPECT_NE(message.find("would run shm_small"), std::string::npos) << message;
  // The schedule behind a forced shared-memory entry (when the direct path declines) is the cost model's.
  EXPECT_EQ(chooseAlgorithm(args, ctx, forced).family, AlgorithmFamily::kSchedule);
  EXPECT_EQ(std::string(chooseAlgorithm(args, ctx, forced).name), chooseAlgorithm(args, ctx, AlgoOverride{}).name);
}

// The documented defaults of the shared-memory model, computed here from the formulas (not the library's code).
double smallSeconds(double touchedBytes) { return 1.5e-6 + touchedBytes / 9.0e9; }
double chunkedSeconds(double busBytes) { return 10.0e-6 + busBytes / 3.5e9; }

TEST(RegistryCatalogue, OneCostModelPricesTheSharedMemoryEntries) {
  const planner::CostParams defaults = planner::defaultCostParams();
  CollArgs small;
  small.coll = Collective::kAllReduce;
  small.count = 1024;  // 4 KiB
  small.dtype = ternFloat32;
  CollArgs large = small;
  large.count = 1 << 18;  // 1 MiB
  const AlgorithmInfo* s = findEntry(Collective::kAllReduce, "shm_small");
  const AlgorithmInfo* p = findEntry(Collective::kAllReduce, "shm_pipelined");
  const AlgorithmInfo* m = findEntry(Collective::kAllReduce, "shm_mapped");
  ASSERT_TRUE(s && p && m);
  EXPECT_NEAR(s->cost(small, 2, defaults.shmAlgorithms), smallSeconds(2 * 4096.0), 1e-12);
  EXPECT_NEAR(p->cost(large, 2, defaults.shmAlgorithms), chunkedSeconds(2.0 * 1 / 2 * 1048576.0), 1e-12);
  EXPECT_NEAR(m->cost(large, 4, defaults.shmAlgorithms), chunkedSeconds(2.0 * 3 / 4 * 1048576.0), 1e-12);

  // A tune file refines them, and writes them back.
  planner::CostParams tuned = defaults;
  planner::applyCalibration(
      nlohmann::json::parse(R"({"version": 1, "shm_algorithms": {"small_alpha_us": 3, "pipelined_busbw_gbs": 7}})"),
      tuned, "test");
  EXPECT_NEAR(s->cost(small, 2, tuned.shmAlgorithms), 3e-6 + 2 * 4096.0 / 9.0e9, 1e-12);
  EXPECT_NEAR(p->cost(large, 2, tuned.shmAlgorithms), 10e-6 + 1048576.0 / 7e9, 1e-12);
  planner::CostParams again = defaults;
  planner::applyCalibration(nlohmann::json::parse(planner::calibrationToJson(tuned).dump()), again, "round trip");
  EXPECT_NEAR(again.shmAlgorithms.smallAlpha, 3e-6, 1e-15);
  EXPECT_NEAR(again.shmAlgorithms.smallBytesPerSecond, 9e9, 1);
  EXPECT_NEAR(again.shmAlgorithms.pipelinedAlpha, 10e-6, 1e-15);
  EXPECT_NEAR(again.shmAlgorithms.pipelinedBusBytesPerSecond, 7e9, 1);
  EXPECT_FALSE(planner::calibrationToJson(defaults).contains("shm_algorithms"));  // defaults stay implicit
  EXPECT_EQ(codeOf([&] {
              planner::applyCalibration(nlohmann::json::parse(R"({"version": 1, "shm_algorithms": {"small": 1}})"),
                                        tuned, "test");
            }),
            ternInvalidArgument);

  // The planner prices the entries with its parameters, where the job allows them.
  const auto oneHost = makeCommPlanner(2, {"h", "h"}, true);
  const planner::Estimate e = oneHost->estimate(Collective::kAllReduce, 1048576.0, "shm_pipelined");
  EXPECT_TRUE(e.error.empty()) << e.error;
  EXPECT_NEAR(e.seconds, chunkedSeconds(1048576.0), 1e-12);
  EXPECT_FALSE(oneHost->estimate(Collective::kAllReduce, 1048576.0, "shm_small").error.empty());  // > 256 KiB
  EXPECT_FALSE(makeCommPlanner(2, {"a", "b"}, true)->estimate(Collective::kAllReduce, 4096, "shm_small").error.empty());
  EXPECT_FALSE(
      makeCommPlanner(2, {"h", "h"}, false)->estimate(Collective::kAllReduce, 4096, "shm_small").error.empty());
}

}  // namespace
}  // namespace tern
