// The UCX tag layout (src/transport/ucx/ucx_tag.hpp): literal tags of the documented layout, sender and sequence
// round-trip, distinct senders and sequences never collide, and the sequence wraps inside its field without
// touching the sender bits.
#include "transport/ucx/ucx_tag.hpp"

#include <gtest/gtest.h>

namespace tern::ucx {
namespace {

TEST(UcxTag, RoundTrips) {
  for (int rank : {0, 1, 7, 1000, kMaxRanks - 1}) {
    for (uint64_t seq : {uint64_t{0}, uint64_t{1}, uint64_t{123456789}, kTagSequenceMask}) {
      uint64_t tag = makeTag(rank, seq);
      EXPECT_EQ(tagSender(tag), rank);
      EXPECT_EQ(tagSequence(tag), seq);
    }
  }
}

// The documented layout, as literal 64-bit values: the sender in the top 20 bits, the sequence in the low 44.
TEST(UcxTag, LayoutIsTheDocumentedOne) {
  EXPECT_EQ(kTagRankBits, 20);
  EXPECT_EQ(kMaxRanks, 1048576);
  EXPECT_EQ(kTagSequenceMask, 0x00000fffffffffffull);
  EXPECT_EQ(makeTag(0, 0), 0x0000000000000000ull);
  EXPECT_EQ(makeTag(0, 1), 0x0000000000000001ull);
  EXPECT_EQ(makeTag(1, 0), 0x0000100000000000ull);
  EXPECT_EQ(makeTag(3, 5), 0x0000300000000005ull);
  EXPECT_EQ(makeTag(0xabcde, 0x123456789ab), 0xabcde123456789abull);
  EXPECT_EQ(makeTag(kMaxRanks - 1, kTagSequenceMask), 0xffffffffffffffffull);
  EXPECT_EQ(makeTag(2, uint64_t{1} << 44), 0x0000200000000000ull) << "sequence 2^44 wraps to 0";
  EXPECT_EQ(tagSender(0xfffff00000000000ull), kMaxRanks - 1);
  EXPECT_EQ(tagSequence(0xfffff00000000000ull), 0u);
  EXPECT_EQ(tagSender(0x00000fffffffffffull), 0);
  EXPECT_EQ(tagSequence(0x00000fffffffffffull), kTagSequenceMask);
  EXPECT_EQ(kTagFullMask, 0xffffffffffffffffull);
}

TEST(UcxTag, DistinctSendersAndSequencesDiffer) {
  EXPECT_NE(makeTag(1, 5), makeTag(2, 5));
  EXPECT_NE(makeTag(1, 5), makeTag(1, 6));
  EXPECT_NE(makeTag(0, 0), makeTag(1, 0));
}

TEST(UcxTag, SequenceWrapsWithinItsField) {
  uint64_t tag = makeTag(3, kTagSequenceMask + 2);
  EXPECT_EQ(tagSender(tag), 3);
  EXPECT_EQ(tagSequence(tag), 1u);
}

}  // namespace
}  // namespace tern::ucx
