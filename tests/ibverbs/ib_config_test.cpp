// Configuration of the ibverbs transport without a device: GID index choice for RoCE (src/transport/ibverbs/
// ib_gid.*) and strict parsing of the TERN_IB_* knobs (ib_settings.*): exact values at the edges of every range,
// and every malformed or out-of-range value an error naming the variable.
#include <gtest/gtest.h>

#include <map>

#include "base/error.hpp"
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
  for (const std::vector<GidEntry>& empty :
       {std::vector<GidEntry>{{0, GidType::kRoceV2, {}}}, std::vector<GidEntry>{}}) {
    try {
      chooseGidIndex(empty, -1, "mlx5_3", 2);
      ADD_FAILURE() << "a table without an address gave an index";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ternSystemError);
      EXPECT_NE(std::string(e.what()).find("mlx5_3 port 2 has no usable GID"), std::string::npos) << e.what();
    }
  }
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
  try {
    chooseGidIndex(t, 4, "mlx5_0", 1);
    ADD_FAILURE() << "an empty entry was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("TERN_IB_GID_INDEX=4: entry 4 of mlx5_0 port 1 is empty"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(chooseGidIndex(t, 3, "mlx5_0", 1), 3);
}

// ::ffff:a.b.c.d is exactly ten zero bytes, then 0xff 0xff: any other prefix is not IPv4-mapped.
TEST(IbGid, Ipv4MappedDetection) {
  EXPECT_TRUE(isIpv4MappedGid(ipv4Mapped(9)));
  EXPECT_FALSE(isIpv4MappedGid(linkLocal()));
  for (int i = 0; i < 12; ++i) {
    auto g = ipv4Mapped(9);
    g[i] ^= (i < 10 ? 0x01 : 0x80);
    EXPECT_FALSE(isIpv4MappedGid(g)) << "byte " << i << " changed";
  }
  auto anyAddress = ipv4Mapped(0);
  anyAddress[12] = 0;
  EXPECT_TRUE(isIpv4MappedGid(anyAddress)) << "the address bytes do not matter";
  EXPECT_TRUE(isZeroGid({}));
  for (int i = 0; i < 16; ++i) {
    std::array<uint8_t, 16> g{};
    g[i] = 1;
    EXPECT_FALSE(isZeroGid(g)) << i;
  }
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
  ASSERT_EQ(s.hca.entries.size(), 1u);
  EXPECT_EQ(s.hca.entries[0].name, "mlx5_2");
  EXPECT_EQ(s.hca.entries[0].port, -1);
  EXPECT_EQ(s.gidIndex, 3);
  EXPECT_EQ(s.chunkBytes, 512u * 1024);
  EXPECT_EQ(s.slots, 16u);
  EXPECT_EQ(s.tuning.timeout, 18);
  EXPECT_EQ(s.tuning.retryCount, 5);
  EXPECT_EQ(s.tuning.serviceLevel, 3);
  EXPECT_EQ(s.tuning.trafficClass, 106);
  EXPECT_EQ(parseFrom({{"IB_CHUNK_BYTES", "1M"}}).chunkBytes, 1u << 20);
}

// Each knob at both ends of its documented range is accepted with its exact value; suffixes are powers of 1024
// in either case.
TEST(IbSettings, RangeEdgesAreAccepted) {
  EXPECT_EQ(parseFrom({{"IB_GID_INDEX", "-1"}}).gidIndex, -1);
  EXPECT_EQ(parseFrom({{"IB_GID_INDEX", "65535"}}).gidIndex, 65535);
  EXPECT_EQ(parseFrom({{"IB_CHUNK_BYTES", "4096"}}).chunkBytes, 4096u);
  EXPECT_EQ(parseFrom({{"IB_CHUNK_BYTES", "4k"}}).chunkBytes, 4096u);
  EXPECT_EQ(parseFrom({{"IB_CHUNK_BYTES", "64M"}}).chunkBytes, 64u << 20);
  EXPECT_EQ(parseFrom({{"IB_CHUNK_BYTES", "65536K"}}).chunkBytes, 64u << 20);
  EXPECT_EQ(parseFrom({{"IB_SLOTS", "2"}}).slots, 2u);
  EXPECT_EQ(parseFrom({{"IB_SLOTS", "1024"}}).slots, 1024u);
  EXPECT_EQ(parseFrom({{"IB_TIMEOUT", "1"}}).tuning.timeout, 1);
  EXPECT_EQ(parseFrom({{"IB_TIMEOUT", "31"}}).tuning.timeout, 31);
  EXPECT_EQ(parseFrom({{"IB_RETRY_CNT", "0"}}).tuning.retryCount, 0);
  EXPECT_EQ(parseFrom({{"IB_SL", "15"}}).tuning.serviceLevel, 15);
  EXPECT_EQ(parseFrom({{"IB_TC", "0"}}).tuning.trafficClass, 0);
  EXPECT_EQ(parseFrom({{"IB_TC", "255"}}).tuning.trafficClass, 255);
}

TEST(IbSettings, MalformedOrOutOfRangeValuesNameTheVariable) {
  const std::map<std::string, std::string> bad[] = {{{"IB_GID_INDEX", "abc"}},
                                                    {{"IB_GID_INDEX", "-2"}},
                                                    {{"IB_CHUNK_BYTES", "1K"}},
                                                    {{"IB_CHUNK_BYTES", "12Q"}},
                                                    {{"IB_SLOTS", "1"}},
                                                    {{"IB_SLOTS", "4096"}},
                                                    {{"IB_TIMEOUT", "0"}},
                                                    {{"IB_RETRY_CNT", "8"}},
                                                    {{"IB_SL", "16"}},
                                                    {{"IB_TC", "256"}},
                                                    {{"IB_HCA", "mlx5_0:x"}},
                                                    {{"IB_GID_INDEX", ""}},
                                                    {{"IB_GID_INDEX", "65536"}},
                                                    {{"IB_GID_INDEX", "3 "}},
                                                    {{"IB_CHUNK_BYTES", "4095"}},
                                                    {{"IB_CHUNK_BYTES", "65M"}},
                                                    {{"IB_CHUNK_BYTES", "1G"}},
                                                    {{"IB_CHUNK_BYTES", "128KB"}},
                                                    {{"IB_CHUNK_BYTES", "99999999999999999999"}},
                                                    {{"IB_SLOTS", "8x"}},
                                                    {{"IB_SLOTS", "1025"}},
                                                    {{"IB_SLOTS", "8K"}},
                                                    {{"IB_TIMEOUT", "32"}},
                                                    {{"IB_RETRY_CNT", "-1"}},
                                                    {{"IB_SL", "-1"}}};
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
