// The QP connection record (src/transport/ibverbs/ib_wire.*), bytes a peer sends: the exact byte layout both ways
// against a record written out by hand from the documented table, round trips, and rejection with a clear error
// (naming the sending rank and what is wrong) of truncated or oversized, foreign, other-version and out-of-range
// records, the out-of-range ones written as raw bytes since the encoder cannot produce them.
#include "transport/ibverbs/ib_wire.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"

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

// sample() as the table in ib_wire.hpp lays it out, byte by byte.
const std::array<uint8_t, 64> kSampleWire = {
    0x54, 0x49, 0x42, 0x56,                          //  0 magic 0x56424954, little-endian ("TIBV")
    0x01, 0x00,                                      //  4 version 1
    0x02,                                            //  6 link layer: Ethernet/RoCE
    0x05,                                            //  7 MTU 4096
    0x34, 0x12,                                      //  8 LID 0x1234
    0x01,                                            // 10 port
    0x00,                                            // 11 reserved
    0xef, 0xcd, 0xab, 0x00,                          // 12 QPN 0xabcdef
    0x56, 0x34, 0x12, 0x00,                          // 16 PSN 0x123456
    0x08, 0x00, 0x00, 0x00,                          // 20 slots 8
    0x20, 0x00, 0x02, 0x00,                          // 24 slot bytes 131104 = 0x20020
    0xef, 0xbe, 0xad, 0xde,                          // 28 rkey 0xdeadbeef
    0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00,  // 32 ring address 0x00007f0012345000
    0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,  // 40 GID, in the order verbs holds it
    0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // 56 reserved
};

// Decoding `wire` as if from rank 5 must fail with `code` and a message containing each of `words`.
void expectRejected(const std::vector<uint8_t>& wire, ternResult_t code, const std::vector<std::string>& words,
                    const std::string& what) {
  SCOPED_TRACE(what);
  try {
    QpAddress a = decodeQpAddress(wire.data(), wire.size(), 5);
    ADD_FAILURE() << "accepted (qpn " << a.qpn << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

std::vector<uint8_t> sampleBytes() { return std::vector<uint8_t>(kSampleWire.begin(), kSampleWire.end()); }

void put32(std::vector<uint8_t>& w, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) w[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

TEST(IbWire, EncodesTheDocumentedLayout) {
  auto w = encodeQpAddress(sample());
  ASSERT_EQ(w.size(), kQpAddressBytes);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(w[i], kSampleWire[i]) << "byte " << i;
}

TEST(IbWire, DecodesTheDocumentedLayout) {
  QpAddress a = decodeQpAddress(kSampleWire.data(), kSampleWire.size(), 3);
  EXPECT_EQ(a.linkLayer, 2);
  EXPECT_EQ(a.mtu, 5);
  EXPECT_EQ(a.lid, 0x1234);
  EXPECT_EQ(a.port, 1);
  EXPECT_EQ(a.qpn, 0xabcdefu);
  EXPECT_EQ(a.psn, 0x123456u);
  EXPECT_EQ(a.slots, 8u);
  EXPECT_EQ(a.slotBytes, 131104u);
  EXPECT_EQ(a.rkey, 0xdeadbeefu);
  EXPECT_EQ(a.ringAddress, 0x00007f0012345000ull);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(a.gid[i], 0xf0 + i) << i;
}

TEST(IbWire, RoundTrips) {
  QpAddress a = sample();
  auto wire = encodeQpAddress(a);
  EXPECT_EQ(decodeQpAddress(wire.data(), wire.size(), 3), a);
  // Random valid records, every field at full width.
  std::mt19937_64 rng(99);
  for (int i = 0; i < 200; ++i) {
    QpAddress b;
    b.linkLayer = static_cast<uint8_t>(1 + rng() % 2);
    b.mtu = static_cast<uint8_t>(1 + rng() % 5);
    b.lid = static_cast<uint16_t>(rng());
    b.port = static_cast<uint8_t>(rng());
    b.qpn = static_cast<uint32_t>(1 + rng() % 0xffffff);
    b.psn = static_cast<uint32_t>(rng() & 0xffffff);
    b.slots = static_cast<uint32_t>(1 + rng() % 0xffffffffu);
    b.slotBytes = static_cast<uint32_t>(1 + rng() % 0xffffffffu);
    b.rkey = static_cast<uint32_t>(rng());
    b.ringAddress = rng() | 1;
    for (auto& g : b.gid) g = static_cast<uint8_t>(rng());
    auto w = encodeQpAddress(b);
    ASSERT_EQ(decodeQpAddress(w.data(), w.size(), 0), b) << i;
  }
}

TEST(IbWire, OnlyLow24BitsOfQpnAndPsnTravel) {
  QpAddress a = sample();
  a.psn = 0xff123456;
  a.qpn = 0x7fabcdef;
  auto w = encodeQpAddress(a);
  EXPECT_EQ(w[15], 0);
  EXPECT_EQ(w[19], 0);
  EXPECT_EQ(decodeQpAddress(w.data(), w.size(), 0).psn, 0x123456u);
  EXPECT_EQ(decodeQpAddress(w.data(), w.size(), 0).qpn, 0xabcdefu);
}

TEST(IbWire, TruncatedOrOversizedRecordsAreUsageErrors) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4}, size_t{6}, size_t{63}, size_t{65}, size_t{128}}) {
    std::vector<uint8_t> w = sampleBytes();
    w.resize(bytes, 0);  // a longer record keeps a valid 64-byte prefix: the length alone must reject it
    expectRejected(w, ternInvalidUsage, {"rank 5", "not tern's", "(" + std::to_string(bytes) + " bytes)"},
                   std::to_string(bytes) + " bytes");
  }
}

TEST(IbWire, ForeignRecordsAreUsageErrors) {
  for (size_t i = 0; i < 4; ++i) {
    std::vector<uint8_t> w = sampleBytes();
    w[i] ^= 0x01;
    expectRejected(w, ternInvalidUsage, {"rank 5", "not tern's"}, "magic byte " + std::to_string(i));
  }
  std::vector<uint8_t> zeros(64, 0);
  expectRejected(zeros, ternInvalidUsage, {"rank 5", "not tern's"}, "all zero");
  std::vector<uint8_t> bigEndianMagic = sampleBytes();
  bigEndianMagic[0] = 0x56, bigEndianMagic[1] = 0x42, bigEndianMagic[2] = 0x49, bigEndianMagic[3] = 0x54;
  expectRejected(bigEndianMagic, ternInvalidUsage, {"not tern's"}, "magic in the wrong byte order");
}

TEST(IbWire, OtherVersionsAreUsageErrorsNamingBoth) {
  for (uint16_t v : {uint16_t{0}, uint16_t{2}, uint16_t{0x0100}, uint16_t{0xffff}}) {
    std::vector<uint8_t> w = sampleBytes();
    w[4] = static_cast<uint8_t>(v);
    w[5] = static_cast<uint8_t>(v >> 8);
    expectRejected(w, ternInvalidUsage, {"rank 5", "version " + std::to_string(v), "this rank version 1"},
                   "version " + std::to_string(v));
  }
}

TEST(IbWire, OutOfRangeFieldsAreRejectedByName) {
  struct Case {
    const char* what;
    size_t offset;
    int width;  // 1 or 4 bytes
    uint32_t value;
    const char* field;
  };
  const Case cases[] = {
      {"link layer 0", 6, 1, 0, "link layer"},
      {"link layer 3", 6, 1, 3, "link layer"},
      {"link layer 255", 6, 1, 255, "link layer"},
      {"MTU 0", 7, 1, 0, "MTU"},
      {"MTU 6", 7, 1, 6, "MTU"},
      {"MTU 255", 7, 1, 255, "MTU"},
      {"QPN 0", 12, 4, 0, "QP number"},
      {"QPN 2^24", 12, 4, 0x01000000, "QP number"},
      {"QPN all ones", 12, 4, 0xffffffff, "QP number"},
      {"PSN 2^24", 16, 4, 0x01000000, "PSN"},
      {"PSN all ones", 16, 4, 0xffffffff, "PSN"},
      {"no slots", 20, 4, 0, "receive ring"},
      {"empty slots", 24, 4, 0, "receive ring"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> w = sampleBytes();
    if (c.width == 1) {
      w[c.offset] = static_cast<uint8_t>(c.value);
    } else {
      put32(w, c.offset, c.value);
    }
    expectRejected(w, ternInternalError, {"rank 5", std::string("bad ") + c.field}, c.what);
  }
  std::vector<uint8_t> noRing = sampleBytes();
  for (size_t i = 32; i < 40; ++i) noRing[i] = 0;
  expectRejected(noRing, ternInternalError, {"rank 5", "bad receive ring"}, "ring address 0");
}

// The edges of each range are accepted, with the exact values sent.
TEST(IbWire, FieldsAtTheEdgesOfTheirRangesAreAccepted) {
  std::vector<uint8_t> w = sampleBytes();
  w[6] = 1;         // InfiniBand
  w[7] = 1;         // MTU 256
  put32(w, 12, 1);  // smallest QPN
  put32(w, 16, 0);  // PSN 0
  put32(w, 20, 1);  // one slot
  put32(w, 24, 1);  // one byte per slot (the transport bounds it further)
  QpAddress a = decodeQpAddress(w.data(), w.size(), 0);
  EXPECT_EQ(a.linkLayer, 1);
  EXPECT_EQ(a.mtu, 1);
  EXPECT_EQ(a.qpn, 1u);
  EXPECT_EQ(a.psn, 0u);
  EXPECT_EQ(a.slots, 1u);
  EXPECT_EQ(a.slotBytes, 1u);
  put32(w, 12, 0xffffff);
  put32(w, 16, 0xffffff);
  put32(w, 20, 0xffffffff);
  w[7] = 5;
  a = decodeQpAddress(w.data(), w.size(), 0);
  EXPECT_EQ(a.qpn, 0xffffffu);
  EXPECT_EQ(a.psn, 0xffffffu);
  EXPECT_EQ(a.slots, 0xffffffffu);
  EXPECT_EQ(a.mtu, 5);
}

}  // namespace
}  // namespace tern::ib
