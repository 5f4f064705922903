// Configuration of the ibverbs transport without a device: GID index choice for RoCE (src/transport/ibverbs/
// ib_gid.*) and strict parsing of the TERN_IB_* knobs (ib_settings.*).
#include <gtest/gtest.h>

#include <map>

#include "core/error.hpp"
#include "transport/ibverbs/ib_gid.hpp"
#include "transport/ibverbs/ib_settings.hpp"

namespace tern::ib {
namespace {

std::array<uint8_t, 16> ipv4Mapped(uint8_t last) { return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, last}; }
std::array<uint8_t, 16> linkLocal() { return {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0, 0, 1}; }

TEST(IbGid, AutomaticPrefersRoceV2WithIpv4) {
  std::vector<GidEntry> t = {{0, GidType::kRoceV1, linkLocal()},
                             {1, GidType::kRoceV2, linkLocal()},
                             {2, GidType::kRoceV1, ipv4Mapped(5)},
                             {3, GidType::kRoceV2, ipv4Mapped(5)}};
  EXPECT_EQ(chooseGidIndex(t, -1, "mlx5_0", 1), 3);
  t.pop_back();
  EXPECT_EQ(chooseGidIndex(t, -1, "mlx5_0", 1), 1) << "then any RoCE v2 entry";
  EXPECT_EQ(chooseGidIndex({{0, GidType::kRoceV1, linkLocal()}}, -1, "mlx5_0", 1), 0) << "then anything";
  EXPECT_EQ(chooseGidIndex({{0, GidType::kInfiniBand, linkLocal()}}, -1, "mlx5_0", 1), 0);
}

TEST(IbGid, ZeroEntriesAreSkippedAndEmptyTablesFail) {
  std::vector<GidEntry> t = {{0, GidType::kRoceV2, {}}, {1, GidType::kRoceV1, ipv4Mapped(1)}};
  EXPECT_EQ(chooseGidIndex(t, -1, "mlx5_0", 1), 1);
  EXPECT_THROW(chooseGidIndex({{0, GidType::kRoceV2, {}}}, -1, "mlx5_0", 1), Error);
  EXPECT_THROW(chooseGidIndex({}, -1, "mlx5_0", 1), Error);
}

TEST(IbGid, RequestedIndexIsHonouredOrRejected) {
  std::vector<GidEntry> t = {
      {0, GidType::kRoceV1, linkLocal()}, {3, GidType::kRoceV2, ipv4Mapped(5)}, {4, GidType::kRoceV2, {}}};
  EXPECT_EQ(chooseGidIndex(t, 0, "mlx5_0", 1), 0) << "even when auto would pick another";
  try {
    chooseGidIndex(t, 7, "mlx5_0", 1);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("TERN_IB_GID_INDEX=7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(chooseGidIndex(t, 4, "mlx5_0", 1), Error) << "an empty entry";
}

TEST(IbGid, Ipv4MappedDetection) {
  EXPECT_TRUE(isIpv4MappedGid(ipv4Mapped(9)));
  EXPECT_FALSE(isIpv4MappedGid(linkLocal()));
  EXPECT_TRUE(isZeroGid({}));
}

Settings parseFrom(const std::map<std::string, std::string>& env) {
  return parseSettings([&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

TEST(IbSettings, Defaults) {
  Settings s = parseFrom({});
  EXPECT_TRUE(s.hca.entries.empty());
  EXPECT_EQ(s.gidIndex, -1);
  EXPECT_EQ(s.chunkBytes, 128u * 1024);
  EXPECT_EQ(s.slots, 8u);
  EXPECT_EQ(s.tuning.timeout, 20);
  EXPECT_EQ(s.tuning.retryCount, 7);
}

TEST(IbSettings, ParsesEveryKnob) {
  Settings s = parseFrom({{"IB_HCA", "^=mlx5_2"},
                          {"IB_GID_INDEX", "3"},
                          {"IB_CHUNK_BYTES", "512K"},
                          {"IB_SLOTS", "16"},
                          {"IB_TIMEOUT", "18"},
                          {"IB_RETRY_CNT", "5"},
                          {"IB_SL", "3"},
                          {"IB_TC", "106"}});
  EXPECT_TRUE(s.hca.exclude);
  EXPECT_TRUE(s.hca.exact);
  EXPECT_EQ(s.gidIndex, 3);
  EXPECT_EQ(s.chunkBytes, 512u * 1024);
  EXPECT_EQ(s.slots, 16u);
  EXPECT_EQ(s.tuning.timeout, 18);
  EXPECT_EQ(s.tuning.retryCount, 5);
  EXPECT_EQ(s.tuning.serviceLevel, 3);
  EXPECT_EQ(s.tuning.trafficClass, 106);
  EXPECT_EQ(parseFrom({{"IB_CHUNK_BYTES", "1M"}}).chunkBytes, 1u << 20);
}

TEST(IbSettings, MalformedOrOutOfRangeValuesNameTheVariable) {
  const std::map<std::string, std::string> bad[] = {
      {{"IB_GID_INDEX", "abc"}}, {{"IB_GID_INDEX", "-2"}}, {{"IB_CHUNK_BYTES", "1K"}}, {{"IB_CHUNK_BYTES", "12Q"}},
      {{"IB_SLOTS", "1"}},       {{"IB_SLOTS", "4096"}},   {{"IB_TIMEOUT", "0"}},      {{"IB_RETRY_CNT", "8"}},
      {{"IB_SL", "16"}},         {{"IB_TC", "256"}},       {{"IB_HCA", "mlx5_0:x"}}};
  for (const auto& env : bad) {
    try {
      parseFrom(env);
      ADD_FAILURE() << env.begin()->first << "=" << env.begin()->second << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ternInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("TERN_" + env.begin()->first), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tern::ib
