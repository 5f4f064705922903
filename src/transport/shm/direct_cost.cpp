#include "transport/shm/direct_cost.hpp"

#include "core/dtype.hpp"

namespace tern::shm {

namespace {

// TODO(measure): placeholders until measured.
constexpr double kSyncSeconds = 1.0e-6;        // one all-to-all flag exchange
constexpr double kCopyBytesPerSecond = 8.0e9;  // memcpy through cache
constexpr double kReduceBytesPerSecond = 6.0e9;

}  // namespace

double predictDirectSeconds(const CollArgs& a, int n, bool small) {
  const double e = static_cast<double>(dataTypeSize(a.dtype));
  const double bytes = static_cast<double>(a.count) * e;
  const double p = n;
  switch (a.coll) {
    case Collective::kBarrier:
      return kSyncSeconds;
    case Collective::kAllReduce:
      if (small) return kSyncSeconds + bytes / kCopyBytesPerSecond + p * bytes / kReduceBytesPerSecond;
      return 3 * kSyncSeconds + bytes / kCopyBytesPerSecond + bytes / kReduceBytesPerSecond +
             (p - 1) / p * bytes / kCopyBytesPerSecond;
    default:
      return kSyncSeconds + 2 * bytes *
                                (a.coll == Collective::kAllGather || a.coll == Collective::kReduceScatter ? p : 1) /
                                kCopyBytesPerSecond;
  }
}

}  // namespace tern::shm
