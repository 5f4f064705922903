// The UCX tag layout (src/transport/ucx/ucx_tag.hpp): sender and sequence round-trip, distinct senders and
// sequences never collide, and the sequence wraps inside its field without touching the sender bits.
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
