// How a one-pass all-to-all shares each block's copy between its sender and its receiver.
//
// In the one-pass form every receiver reads its blocks from the senders' buffers (by CMA, or in place), so a rank's
// time is its own block's copy plus everything it receives. Uneven all-to-allv splits (MoE: a popular expert's rank
// receives far more than the others) leave the busiest rank copying while its peers wait. A block can be moved by
// either end, since both may reach the other's memory: the sender writes its leading part into the receiver's
// buffer, the receiver reads the rest. Splitting each block so that every rank copies about as much as its peers
// shortens the call to the balanced load; evenly loaded calls (every plain all-to-all) stay all-read.
#pragma once

#include <cstdint>
#include <vector>

namespace tern::shm {

// The shared-memory all-to-all's settings: a part is moved by the other end only when that saves at least this much
// copying (each part is one more system call and one more walk of page tables), at page multiples from its start.
constexpr uint64_t kAlltoAllMinBalanceShift = 64 * 1024;
constexpr uint64_t kAlltoAllBalanceAlign = 4096;

struct AlltoAllCopyPlan {
  // pushed[p * n + q]: the leading bytes of rank p's block for rank q that p writes into q's buffer; q reads the
  // rest. Zero on the diagonal (a rank copies its own block itself).
  std::vector<uint64_t> pushed;
  std::vector<uint64_t> load;  // per rank: the bytes it copies under this plan
};

// n ranks; bytes[p * n + q]: the bytes rank p sends rank q (the diagonal is the rank's own copy); fixedLoad (empty,
// or one entry per rank) adds copies that cannot move (blocks that went through a staging slot: pass 0 for those
// in bytes). A block is split only where that moves at least minShift bytes (each part costs a system call), at
// multiples of align bytes from its start (pages, so that no page is touched by both ends). Every rank computes
// the same plan from the same inputs.
AlltoAllCopyPlan planAlltoAllCopies(int n, const std::vector<uint64_t>& bytes, const std::vector<uint64_t>& fixedLoad,
                                    uint64_t minShift, uint64_t align);

}  // namespace tern::shm
