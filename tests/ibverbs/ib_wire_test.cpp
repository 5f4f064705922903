// The QP connection record (src/transport/ibverbs/ib_wire.*): exact byte layout, round trip, and rejection of
// foreign, other-version or out-of-range records.
#include "transport/ibverbs/ib_wire.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace tern::ib {
namespace {

QpAddress sample() {
  QpAddress a;
  a.linkLayer = 2;
  a.mtu = 5;
  a.lid = 0x1234;
  a.port = 1;
  a.qpn = 0xabcdef;
  a.psn = 0x123456;
  a.slots = 8;
  a.slotBytes = 131104;
  a.rkey = 0xdeadbeef;
  a.ringAddress = 0x00007f0012345000ull;
  for (int i = 0; i < 16; ++i) a.gid[i] = static_cast<uint8_t>(0xf0 + i);
  return a;
}

TEST(IbWire, RoundTrips) {
  QpAddress a = sample();
  auto wire = encodeQpAddress(a);
  EXPECT_EQ(decodeQpAddress(wire.data(), wire.size(), 3), a);
}

TEST(IbWire, LayoutIsTheDocumentedOne) {
  auto w = encodeQpAddress(sample());
  ASSERT_EQ(w.size(), 64u);
  EXPECT_EQ(w[0], 0x54);  // magic 0x56424954, little-endian
  EXPECT_EQ(w[3], 0x56);
  EXPECT_EQ(w[4], 1);  // version
  EXPECT_EQ(w[5], 0);
  EXPECT_EQ(w[6], 2);     // link layer
  EXPECT_EQ(w[7], 5);     // mtu
  EXPECT_EQ(w[8], 0x34);  // lid
  EXPECT_EQ(w[9], 0x12);
  EXPECT_EQ(w[10], 1);  // port
  EXPECT_EQ(w[11], 0);
  EXPECT_EQ(w[12], 0xef);  // qpn
  EXPECT_EQ(w[14], 0xab);
  EXPECT_EQ(w[15], 0);
  EXPECT_EQ(w[16], 0x56);  // psn
  EXPECT_EQ(w[20], 8);     // slots
  EXPECT_EQ(w[24], 0x20);  // slot bytes 131104 = 0x20020
  EXPECT_EQ(w[26], 0x02);
  EXPECT_EQ(w[28], 0xef);  // rkey
  EXPECT_EQ(w[31], 0xde);
  EXPECT_EQ(w[32], 0x00);  // ring address
  EXPECT_EQ(w[33], 0x50);
  EXPECT_EQ(w[37], 0x7f);
  EXPECT_EQ(w[40], 0xf0);  // gid, as held by verbs
  EXPECT_EQ(w[55], 0xff);
  for (int i = 56; i < 64; ++i) EXPECT_EQ(w[i], 0) << i;
}

TEST(IbWire, OnlyLow24BitsOfQpnAndPsnTravel) {
  QpAddress a = sample();
  a.psn = 0xff123456;
  auto w = encodeQpAddress(a);
  EXPECT_EQ(decodeQpAddress(w.data(), w.size(), 0).psn, 0x123456u);
}

TEST(IbWire, ForeignOrOtherVersionRecordsAreUsageErrors) {
  auto w = encodeQpAddress(sample());
  auto bad = w;
  bad[0] ^= 1;
  try {
    decodeQpAddress(bad.data(), bad.size(), 7);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("rank 7"), std::string::npos) << e.what();
  }
  bad = w;
  bad[4] = 2;
  try {
    decodeQpAddress(bad.data(), bad.size(), 7);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("version"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decodeQpAddress(w.data(), 63, 7), Error);
}

TEST(IbWire, OutOfRangeFieldsAreRejected) {
  auto check = [](auto mutate) {
    QpAddress a = sample();
    mutate(a);
    auto w = encodeQpAddress(a);
    EXPECT_THROW(decodeQpAddress(w.data(), w.size(), 1), Error);
  };
  check([](QpAddress& a) { a.linkLayer = 0; });
  check([](QpAddress& a) { a.mtu = 6; });
  check([](QpAddress& a) { a.qpn = 0; });
  check([](QpAddress& a) { a.slots = 0; });
  check([](QpAddress& a) { a.slotBytes = 0; });
  check([](QpAddress& a) { a.ringAddress = 0; });
}

}  // namespace
}  // namespace tern::ib
