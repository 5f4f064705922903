#include "transport/shm/direct_cost.hpp"

#include "core/dtype.hpp"

namespace tern::shm {

namespace {

// Fitted to all_reduce_perf (float32 sum, ordinary buffers, 2 ranks) on the 2-vCPU development VM, best of
// several runs under other load:
//   one phase:  1.6 us at 8 B..2 KiB, 5.4 us at 32 KiB, 9 us at 64 KiB, 15 us at 128 KiB  (alpha + n*bytes/beta)
//   pipelined:  ~105 us at 512 KiB, ~530 us at 2 MiB, ~2.9 ms at 8 MiB, ~10.7 ms at 32 MiB (bus bytes / beta);
// in-place reads of registered buffers are about twice as fast, which the planner cannot know from CollArgs, so the
// model is the staged (conservative) one.
constexpr double kSmallAlpha = 1.5e-6;
constexpr double kSmallBytesPerSecond = 9.0e9;  // every rank folds every rank's data, in cache
constexpr double kPipelinedAlpha = 10.0e-6;     // descriptor exchange and pipeline fill
constexpr double kPipelinedBusBytesPerSecond = 3.5e9;

}  // namespace

double predictDirectSeconds(const CollArgs& a, int n, bool small) {
  const double p = n;
  const double bytes = static_cast<double>(a.count) * static_cast<double>(dataTypeSize(a.dtype));
  if (a.coll == Collective::kBarrier) return kSmallAlpha;
  if (small) {
    // Bytes each rank folds or copies out of the small areas.
    double touched = a.coll == Collective::kReduceScatter || a.coll == Collective::kAllGather ? p * bytes : bytes;
    if (a.coll == Collective::kAllReduce || a.coll == Collective::kReduce) touched = p * bytes;
    return kSmallAlpha + touched / kSmallBytesPerSecond;
  }
  // nccl-tests bus bytes: what each rank must move, whatever the algorithm.
  double busBytes;
  switch (a.coll) {
    case Collective::kAllReduce:
      busBytes = 2 * (p - 1) / p * bytes;
      break;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      busBytes = (p - 1) * bytes;  // count is per rank: (n-1)/n of the n*count total
      break;
    default:
      busBytes = bytes;
      break;
  }
  return kPipelinedAlpha + busBytes / kPipelinedBusBytesPerSecond;
}

}  // namespace tern::shm
