// Calibration files: schema, round trip, errors, and that a calibration changes what the model predicts.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "planner/calibration.hpp"
#include "planner/cluster_spec.hpp"
#include "planner/planner.hpp"

namespace tern::planner {
namespace {

TEST(PlannerCalibration, AppliesAndRoundTrips) {
  const auto doc = nlohmann::json::parse(R"({
    "version": 1,
    "links": {"loopback": {"alpha_us": 20, "bandwidth_gbs": 2.5,
                           "cache": [{"bytes": 4194304, "bandwidth_gbs": 4}, {"bytes": 33554432, "bandwidth_gbs": 3}]},
              "network:eth": {"alpha_us": 60, "bandwidth_gbs": 0.11, "speed_gbps": 1}},
    "compute": {"cpu": {"reduce_gbs": 5, "copy_gbs": 9}},
    "codecs": {"sign": {"encode_gbs": 2, "decode_gbs": 3, "cache": [{"bytes": 16777216, "speedup": 4}]}},
    "shm_direct": {"alpha_us": 3, "busbw_gbs": 7.5, "cache": [{"bytes": 33554432, "busbw_gbs": 10}]},
    "fit": {"anything": "goes"}
  })");
  CostParams p = defaultCostParams();
  applyCalibration(doc, p, "test");
  EXPECT_DOUBLE_EQ(p.links.at("loopback").cost.alpha, 20e-6);
  EXPECT_DOUBLE_EQ(p.links.at("loopback").cost.beta, 1 / 2.5e9);
  EXPECT_DOUBLE_EQ(p.links.at("network:ethernet").speedGbps, 1);
  EXPECT_DOUBLE_EQ(p.cpu.reduceBeta, 1 / 5e9);
  EXPECT_DOUBLE_EQ(p.codecs.at("sign").decodeBeta, 1 / 3e9);
  EXPECT_DOUBLE_EQ(p.shmDirect->beta, 1 / 7.5e9);
  ASSERT_EQ(p.links.at("loopback").cache.size(), 2u);
  EXPECT_DOUBLE_EQ(p.links.at("loopback").cache[1].beta, 1 / 3e9);
  EXPECT_DOUBLE_EQ(p.codecs.at("sign").cache[0].beta, 0.25);
  // Cache weights: all in the first level up to 4 MiB; at 64 MiB 1/16 in it, 7/16 in the second, half beyond.
  const CacheLevels& lv = p.links.at("loopback").cache;
  EXPECT_DOUBLE_EQ(cachedBeta(1 / 2.5e9, lv, 2 << 20), 1 / 4e9);
  const std::vector<double> w = cacheWeights(lv, 64 << 20);
  EXPECT_DOUBLE_EQ(w[0], 1.0 / 16);
  EXPECT_DOUBLE_EQ(w[1], 7.0 / 16);
  EXPECT_DOUBLE_EQ(w[2], 0.5);
  EXPECT_NE(p.find(ModelLink::kNetwork, topo::NetKind::kEthernet), nullptr);
  EXPECT_EQ(p.find(ModelLink::kNetwork, topo::NetKind::kRoce), nullptr);
  CostParams q = defaultCostParams();
  applyCalibration(nlohmann::json::parse(calibrationToJson(p).dump()), q, "again");
  EXPECT_NEAR(q.links.at("loopback").cost.beta, p.links.at("loopback").cost.beta, 1e-20);
  EXPECT_NEAR(q.shmDirect->alpha, 3e-6, 1e-12);
  ASSERT_EQ(q.links.at("loopback").cache.size(), 2u);
  EXPECT_NEAR(q.shmDirect->cache[0].beta, 1 / 10e9, 1e-20);
  EXPECT_NEAR(q.codecs.at("sign").cache[0].beta, 0.25, 1e-9);
}

TEST(PlannerCalibration, BadDocumentsSayWhat) {
  CostParams p;
  auto bad = [&](const char* text) {
    try {
      applyCalibration(nlohmann::json::parse(text), p, "f.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(bad(R"({"links": {}})").find("version"), std::string::npos);
  EXPECT_NE(bad(R"({"version": 9})").find("not supported"), std::string::npos);
  EXPECT_NE(bad(R"({"version": 1, "links": {"warp": {"bandwidth_gbs": 1}}})").find("warp"), std::string::npos);
  EXPECT_NE(bad(R"({"version": 1, "links": {"shm": {"bandwidth_gbs": -1}}})").find("positive"), std::string::npos);
  EXPECT_NE(bad(R"({"version": 1, "links": {"shm": {"alpha_us": 1}}})").find("required"), std::string::npos);
  EXPECT_NE(bad(R"({"version": 1, "typo": 1})").find("typo"), std::string::npos);
  EXPECT_NE(bad(R"({"version": 1, "links": {"shm": {"bandwidth_gbs": 1, "cache": [{"bytes": 8, "bandwidth_gbs": 2},
            {"bytes": 4, "bandwidth_gbs": 3}]}}})")
                .find("ascending"),
            std::string::npos);
  EXPECT_NE(bad(R"({"version": 1, "links": {"network": {"bandwidth_gbs": 1, "cache": []}}})").find("same-host"),
            std::string::npos);
  EXPECT_THROW(applyCalibrationFile("/nonexistent/tune.json", p), Error);
}

TEST(PlannerCalibration, NetworkEfficiencyCarriesOverToOtherSpeeds) {
  // Measured 112 MB/s on 1 Gb/s (90% of 125 MB/s): on a 10 Gb/s network the model expects 1.12 GB/s.
  CostParams p = defaultCostParams();
  p.links["network:ethernet"] = {{50e-6, 1.0 / 0.1125e9}, 1};
  ClusterSpec s = presetSpec("cpu-2x1-1g");
  s.netGbps = 10;
  LinkTable links(buildCluster(s), IntraTransport::kTopology, p);
  EXPECT_NEAR(links.pair(0, 1).beta, 1.0 / 1.125e9, 1e-15);
  EXPECT_NEAR(links.pair(0, 1).alpha, 50e-6, 1e-12);
  // Uncalibrated classes keep the topology's figures; the loopback default applies to TCP-only hosts.
  LinkTable tcp(buildCluster(presetSpec("loopback-2")), IntraTransport::kLoopback, p);
  EXPECT_EQ(tcp.pair(0, 1).cls, ModelLink::kLoopback);
  EXPECT_DOUBLE_EQ(tcp.pair(0, 1).beta, defaultLinkCost(ModelLink::kLoopback).beta);
}

}  // namespace
}  // namespace tern::planner
