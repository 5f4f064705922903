#include "algorithms/shm/alltoall_balance.hpp"

#include <algorithm>
#include <cstddef>

namespace tern::shm {

namespace {

// Sweeps over the pairs: each moves part of a block to the less loaded of its two ends. A few suffice (each sweep
// roughly halves the imbalance between the ends of every pair), and a fixed count keeps the plan cheap and the same
// on every rank.
constexpr int kSweeps = 4;

}  // namespace

AlltoAllCopyPlan planAlltoAllCopies(int n, const std::vector<uint64_t>& bytes, const std::vector<uint64_t>& fixedLoad,
                                    uint64_t minShift, uint64_t align) {
  const auto un = static_cast<size_t>(n);
  AlltoAllCopyPlan plan;
  plan.pushed.assign(un * un, 0);
  plan.load.assign(un, 0);
  if (align == 0) align = 1;
  for (size_t r = 0; r < un; ++r) {
    if (!fixedLoad.empty()) plan.load[r] = fixedLoad[r];
    for (size_t p = 0; p < un; ++p) plan.load[r] += bytes[p * un + r];  // all read by the receiver (own copy too)
  }
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    bool moved = false;
    for (size_t p = 0; p < un; ++p) {
      for (size_t q = 0; q < un; ++q) {
        const uint64_t b = bytes[p * un + q];
        if (p == q || b == 0) continue;
        uint64_t& x = plan.pushed[p * un + q];
        // Move half the difference between the receiver's and the sender's loads to the lighter one.
        const auto diff = static_cast<int64_t>(plan.load[q]) - static_cast<int64_t>(plan.load[p]);
        const int64_t want = std::clamp<int64_t>(static_cast<int64_t>(x) + diff / 2, 0, static_cast<int64_t>(b));
        uint64_t next = static_cast<uint64_t>(want);
        if (next != b) next = next / align * align;
        const uint64_t shift = next > x ? next - x : x - next;
        if (shift < minShift || shift == 0) continue;
        if (next > x) {
          plan.load[p] += shift;
          plan.load[q] -= shift;
        } else {
          plan.load[p] -= shift;
          plan.load[q] += shift;
        }
        x = next;
        moved = true;
      }
    }
    if (!moved) break;
  }
  return plan;
}

}  // namespace tern::shm
