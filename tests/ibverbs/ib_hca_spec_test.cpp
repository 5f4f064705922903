// TERN_IB_HCA parsing and port selection (src/transport/ibverbs/ib_hca_spec.*), NCCL_IB_HCA semantics: prefixes by
// default, '=' exact names, '^' exclusion, ':port' restrictions, inactive ports never selected.
#include "transport/ibverbs/ib_hca_spec.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace tern::ib {
namespace {

std::vector<PortInfo> fabric() {
  return {{"mlx5_0", 1, true, LinkLayer::kInfiniBand},  {"mlx5_0", 2, true, LinkLayer::kInfiniBand},
          {"mlx5_1", 1, true, LinkLayer::kEthernet},    {"mlx5_10", 1, true, LinkLayer::kInfiniBand},
          {"mlx5_2", 1, false, LinkLayer::kInfiniBand}, {"bnxt_re0", 1, true, LinkLayer::kEthernet}};
}

std::vector<std::string> names(const std::vector<PortInfo>& ports) {
  std::vector<std::string> out;
  for (const auto& p : ports) out.push_back(p.device + ":" + std::to_string(p.port));
  return out;
}

using V = std::vector<std::string>;

TEST(HcaSpec, EmptySelectsEveryActivePort) {
  EXPECT_EQ(names(selectPorts(HcaSpec::parse(""), fabric())),
            (V{"mlx5_0:1", "mlx5_0:2", "mlx5_1:1", "mlx5_10:1", "bnxt_re0:1"}));
}

TEST(HcaSpec, NamesArePrefixes) {
  EXPECT_EQ(names(selectPorts(HcaSpec::parse("mlx5_1"), fabric())), (V{"mlx5_1:1", "mlx5_10:1"}));
  EXPECT_EQ(names(selectPorts(HcaSpec::parse("bnxt"), fabric())), (V{"bnxt_re0:1"}));
}

TEST(HcaSpec, EqualsMeansExact) {
  HcaSpec s = HcaSpec::parse("=mlx5_1");
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(names(selectPorts(s, fabric())), (V{"mlx5_1:1"}));
}

TEST(HcaSpec, PortsRestrict) {
  EXPECT_EQ(names(selectPorts(HcaSpec::parse("mlx5_0:1,mlx5_1"), fabric())), (V{"mlx5_0:1", "mlx5_1:1", "mlx5_10:1"}));
  EXPECT_EQ(names(selectPorts(HcaSpec::parse("=mlx5_0:2"), fabric())), (V{"mlx5_0:2"}));
}

TEST(HcaSpec, CaretExcludes) {
  HcaSpec s = HcaSpec::parse("^mlx5_1");
  EXPECT_TRUE(s.exclude);
  EXPECT_EQ(names(selectPorts(s, fabric())), (V{"mlx5_0:1", "mlx5_0:2", "bnxt_re0:1"}));
  EXPECT_EQ(names(selectPorts(HcaSpec::parse("^=mlx5_1"), fabric())),
            (V{"mlx5_0:1", "mlx5_0:2", "mlx5_10:1", "bnxt_re0:1"}));
  EXPECT_EQ(names(selectPorts(HcaSpec::parse("^=mlx5_0:2"), fabric())),
            (V{"mlx5_0:1", "mlx5_1:1", "mlx5_10:1", "bnxt_re0:1"}));
}

TEST(HcaSpec, InactivePortsAreNeverSelected) { EXPECT_TRUE(selectPorts(HcaSpec::parse("=mlx5_2"), fabric()).empty()); }

TEST(HcaSpec, ToleratesSpacesAndRoundTrips) {
  HcaSpec s = HcaSpec::parse(" mlx5_0:1 , mlx5_1");
  ASSERT_EQ(s.entries.size(), 2u);
  EXPECT_EQ(s.entries[0].name, "mlx5_0");
  EXPECT_EQ(s.entries[0].port, 1);
  EXPECT_EQ(s.entries[1].port, -1);
  EXPECT_EQ(s.toString(), "mlx5_0:1,mlx5_1");
  EXPECT_EQ(HcaSpec::parse("^=mlx5_2:1").toString(), "^=mlx5_2:1");
}

TEST(HcaSpec, MalformedSpecsAreErrors) {
  for (const char* bad : {"mlx5_0:", "mlx5_0:x", "mlx5_0:0", "mlx5_0:256", ",mlx5_0", "mlx5_0,,mlx5_1", "^", "=", ":1",
                          "^=", "mlx5_0:1x", "mlx5_0:-1", "mlx5_0,", "mlx5_0, ", "=mlx5_0:1,:2"}) {
    try {
      HcaSpec::parse(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ternInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("TERN_IB_HCA"), std::string::npos) << e.what();
    }
  }
}

TEST(HcaSpec, PortRangeEdgesAreAccepted) {
  HcaSpec s = HcaSpec::parse("a:1,b:255");
  ASSERT_EQ(s.entries.size(), 2u);
  EXPECT_EQ(s.entries[0].name, "a");
  EXPECT_EQ(s.entries[0].port, 1);
  EXPECT_EQ(s.entries[1].name, "b");
  EXPECT_EQ(s.entries[1].port, 255);
  EXPECT_FALSE(s.exclude);
  EXPECT_FALSE(s.exact);
  EXPECT_TRUE(HcaSpec::parse("   ").entries.empty()) << "blank means every port, like unset";
}

TEST(HcaSpec, PortForRankSpreadsRanks) {
  auto selected = selectPorts(HcaSpec::parse("=mlx5_0"), fabric());
  ASSERT_EQ(selected.size(), 2u);
  EXPECT_EQ(portForRank(selected, 0).port, 1);
  EXPECT_EQ(portForRank(selected, 1).port, 2);
  EXPECT_EQ(portForRank(selected, 2).port, 1);
  EXPECT_EQ(portForRank(selected, 7).port, 2);
  EXPECT_EQ(portForRank(selected, 7).device, "mlx5_0");
  EXPECT_THROW(portForRank({}, 0), Error);
}

}  // namespace
}  // namespace tern::ib
