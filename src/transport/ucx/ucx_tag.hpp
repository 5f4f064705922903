// The 64-bit UCP tag of a tern message: the sender's rank in the top 20 bits, the message's sequence number in the
// (sender -> receiver) direction in the low 44 bits.
//
// Why this makes the transport's FIFO contract hold: a worker belongs to exactly one communicator, so tags never
// collide across communicators; the k-th receive this rank posts from peer P asks for exactly (P, k) with a full
// mask, so it can only match the k-th send P posted to this rank, whatever order UCX delivers messages in (it may
// reorder across lanes, and an unexpected message waits in UCX's queue until its receive is posted). Sequence
// numbers wrap after 2^44 messages per direction, far beyond any job.
#pragma once

#include <cstdint>

namespace tern::ucx {

inline constexpr int kTagRankBits = 20;
inline constexpr int kTagSequenceBits = 64 - kTagRankBits;
inline constexpr int kMaxRanks = 1 << kTagRankBits;
inline constexpr uint64_t kTagSequenceMask = (uint64_t{1} << kTagSequenceBits) - 1;
inline constexpr uint64_t kTagFullMask = ~uint64_t{0};

constexpr uint64_t makeTag(int senderRank, uint64_t sequence) {
  return (static_cast<uint64_t>(senderRank) << kTagSequenceBits) | (sequence & kTagSequenceMask);
}
constexpr int tagSender(uint64_t tag) { return static_cast<int>(tag >> kTagSequenceBits); }
constexpr uint64_t tagSequence(uint64_t tag) { return tag & kTagSequenceMask; }

}  // namespace tern::ucx
