#include "algorithms/shm/direct_cost.hpp"

#include "base/dtype.hpp"

namespace tern::shm {

// The default parameters (ShmAlgorithmCost) were fitted to all_reduce_perf (float32 sum, ordinary buffers,
// 2 ranks): one phase as alpha + n x bytes / bandwidth (every rank folds every rank's data, in cache), the chunked
// algorithms as alpha + bus bytes / bus bandwidth. In-place reads of registered buffers are faster, which the
// planner cannot know from CollArgs, so the model is the staged (conservative) one.

double predictDirectSeconds(const CollArgs& a, int n, bool small, const ShmAlgorithmCost& cost) {
  const double p = n;
  const double bytes = static_cast<double>(a.count) * static_cast<double>(dataTypeSize(a.dtype));
  if (a.coll == Collective::kBarrier) return cost.smallAlpha;
  if (a.coll == Collective::kAlltoAll || a.coll == Collective::kAlltoAllv) {
    // What a rank moves to and from its peers. Inline (shm_small), it is copied into the small area or slot and out of
    // the peers'; otherwise moved once, as the other one-pass and chunked forms. alltoallv: the mean of what this rank
    // sends and receives, the share of its blocks' copying it does once the one-pass form has split each block between
    // its two ends (alltoall_balance.hpp); the (p - 1) / p leaves out its own block (which one it is, CollArgs does
    // not say).
    double peerBytes = (p - 1) * bytes;
    if (a.coll == Collective::kAlltoAllv) {
      double sent = 0, received = 0;
      for (size_t c : a.sendCounts) sent += static_cast<double>(c);
      for (size_t c : a.recvCounts) received += static_cast<double>(c);
      peerBytes = (sent + received) / 2 * (p - 1) / p * static_cast<double>(dataTypeSize(a.dtype));
    }
    if (small) return cost.smallAlpha + 2 * peerBytes / cost.smallBytesPerSecond;
    return cost.pipelinedAlpha + peerBytes / cost.pipelinedBusBytesPerSecond;
  }
  if (small) {
    // Bytes each rank folds or copies out of the small areas.
    double touched = a.coll == Collective::kReduceScatter || a.coll == Collective::kAllGather ? p * bytes : bytes;
    if (a.coll == Collective::kAllReduce || a.coll == Collective::kReduce) touched = p * bytes;
    return cost.smallAlpha + touched / cost.smallBytesPerSecond;
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
  return cost.pipelinedAlpha + busBytes / cost.pipelinedBusBytesPerSecond;
}

}  // namespace tern::shm
