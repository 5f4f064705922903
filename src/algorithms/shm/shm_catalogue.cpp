#include "algorithms/shm/shm_catalogue.hpp"

#include <algorithm>
#include <cstdint>

#include "algorithms/shm/direct_call.hpp"
#include "algorithms/shm/direct_cost.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "transport/shm/shm_layout.hpp"

namespace tern::shm {

namespace {

bool isDirectDataCollective(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kBroadcast:
    case Collective::kReduce:
      return true;
    default:
      return false;
  }
}

bool refuse(std::string* why, std::string reason) {
  if (why != nullptr) *why = std::move(reason);
  return false;
}

}  // namespace

bool isAlltoAll(Collective c) { return c == Collective::kAlltoAll || c == Collective::kAlltoAllv; }

namespace {

bool alltoallApplies(const CollArgs& a, int nranks, std::string* why) {
  if (!kAlltoAllDispatched) return refuse(why, format("it has no form for %s", collectiveName(a.coll)));
  if (dataTypeSize(a.dtype) == 0) return refuse(why, "unknown datatype");
  const size_t n = static_cast<size_t>(nranks);
  if (a.coll == Collective::kAlltoAllv &&
      (a.sendCounts.size() != n || a.recvCounts.size() != n || a.sendDispls.size() != n || a.recvDispls.size() != n)) {
    return refuse(why, format("counts and displacements need %d entries each", nranks));
  }
  return true;
}

size_t extentBytes(const std::vector<size_t>& counts, const std::vector<size_t>& displs, size_t esize) {
  size_t hi = 0;
  for (size_t i = 0; i < counts.size() && i < displs.size(); ++i) {
    if (counts[i] > 0) hi = std::max(hi, displs[i] + counts[i]);
  }
  return hi * esize;
}

}  // namespace

const char* shmAlgorithmName(ShmAlgorithm a) {
  switch (a) {
    case ShmAlgorithm::kSmall:
      return "shm_small";
    case ShmAlgorithm::kPipelined:
      return "shm_pipelined";
    case ShmAlgorithm::kCma:
      return "shm_cma";
    case ShmAlgorithm::kMapped:
      return "shm_mapped";
    default:
      return "";
  }
}

ShmAlgorithm shmAlgorithmNamed(std::string_view name) {
  for (ShmAlgorithm a : {ShmAlgorithm::kSmall, ShmAlgorithm::kPipelined, ShmAlgorithm::kCma, ShmAlgorithm::kMapped}) {
    if (name == shmAlgorithmName(a)) return a;
  }
  return ShmAlgorithm::kNone;
}

size_t shmInputBytes(const CollArgs& a, int n) {
  const size_t e = dataTypeSize(a.dtype);
  if (a.coll == Collective::kAlltoAll) return a.count * e * static_cast<size_t>(n);
  if (a.coll == Collective::kAlltoAllv) return extentBytes(a.sendCounts, a.sendDispls, e);
  return a.coll == Collective::kReduceScatter ? a.count * e * static_cast<size_t>(n) : a.count * e;
}

size_t shmOutputBytes(const CollArgs& a, int n) {
  const size_t e = dataTypeSize(a.dtype);
  if (a.coll == Collective::kAlltoAll) return a.count * e * static_cast<size_t>(n);
  if (a.coll == Collective::kAlltoAllv) return extentBytes(a.recvCounts, a.recvDispls, e);
  return a.coll == Collective::kAllGather ? a.count * e * static_cast<size_t>(n) : a.count * e;
}

size_t shmSmallLimit(Collective c, int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kReduce:
    case Collective::kReduceScatter:
      return std::clamp<size_t>((size_t{1} << 20) / (n * n), size_t{8} << 10, kSmallBytes);
    default:
      return std::min<size_t>(size_t{64} << 10, kSmallBytes);
  }
}

size_t shmCmaMinBytes(Collective c, int nranks) {
  const bool gathers = c == Collective::kAllGather || c == Collective::kBroadcast;
  if (nranks <= 2) return gathers ? kCmaGatherMinBytes : kCmaAllReduceMinBytes;
  return gathers ? shmSmallLimit(c, nranks) + 1 : 4 * kCmaAllReduceMinBytes;
}

namespace {
size_t alltoallInlineLimit(bool inPlace, int nranks) {
  const size_t capacity = alltoallInlineCapacity(nranks);
  if (inPlace) return capacity;
  return std::min(capacity, (size_t{16} << 10) * static_cast<size_t>(std::max(1, nranks - 1)));
}
}  // namespace

size_t shmAlltoAllInlineLimit(const CollArgs& a, int nranks) { return alltoallInlineLimit(a.inPlace, nranks); }

bool shmAlltoAllOnePhase(const CollArgs& a, int nranks, bool forcedSmall) {
  if (a.coll != Collective::kAlltoAll || nranks < 1) return false;
  const size_t inputBytes = a.count * dataTypeSize(a.dtype) * static_cast<size_t>(nranks);
  if (inputBytes > kSmallBytes) return false;
  return forcedSmall || alltoallPeerBytes(a, 0, nranks) <= alltoallInlineLimit(false, nranks);
}

ShmAlgorithm defaultShmAlgorithm(const CollArgs& a, int nranks) {
  if (a.coll == Collective::kBarrier) return ShmAlgorithm::kSmall;
  if (isAlltoAll(a.coll)) {
    if (!alltoallApplies(a, nranks, nullptr)) return ShmAlgorithm::kNone;
    if (a.coll == Collective::kAlltoAllv) return ShmAlgorithm::kPipelined;
    return alltoallPeerBytes(a, 0, nranks) <= shmAlltoAllInlineLimit(a, nranks) ? ShmAlgorithm::kSmall
                                                                                : ShmAlgorithm::kPipelined;
  }
  if (!isDirectDataCollective(a.coll) || dataTypeSize(a.dtype) == 0) return ShmAlgorithm::kNone;
  return shmInputBytes(a, nranks) <= shmSmallLimit(a.coll, nranks) ? ShmAlgorithm::kSmall : ShmAlgorithm::kPipelined;
}

bool shmSmallApplies(const CollArgs& a, int nranks, std::string* why) {
  if (a.coll == Collective::kBarrier) return true;
  if (isAlltoAll(a.coll)) {
    if (!alltoallApplies(a, nranks, why)) return false;
    // Alltoallv: only this rank's sizes are known here; the run checks every rank's.
    const size_t bytes = alltoallPeerBytes(a, 0, nranks);
    if (a.coll == Collective::kAlltoAll && bytes > alltoallInlineCapacity(nranks)) {
      return refuse(why, format("%zu bytes for peers per rank exceed a staging slot's %zu", bytes,
                                alltoallInlineCapacity(nranks)));
    }
    return true;
  }
  if (!isDirectDataCollective(a.coll)) return refuse(why, format("it has no form for %s", collectiveName(a.coll)));
  if (dataTypeSize(a.dtype) == 0) return refuse(why, "unknown datatype");
  const size_t bytes = shmInputBytes(a, nranks);
  if (bytes > kSmallBytes) {
    return refuse(why, format("%zu input bytes per rank exceed its small area of %zu bytes", bytes, kSmallBytes));
  }
  return true;
}

bool shmPipelinedApplies(const CollArgs& a, int nranks, std::string* why) {
  if (isAlltoAll(a.coll)) return alltoallApplies(a, nranks, why);
  if (!isDirectDataCollective(a.coll)) return refuse(why, format("it has no form for %s", collectiveName(a.coll)));
  if (dataTypeSize(a.dtype) == 0) return refuse(why, "unknown datatype");
  return true;
}

bool shmCmaApplies(const CollArgs& a, int nranks, std::string* why) {
  if (isAlltoAll(a.coll)) {
    if (nranks < 2) return refuse(why, "it needs two ranks");
    return alltoallApplies(a, nranks, why);  // blocks are read one system call each, at any size
  }
  if (a.coll != Collective::kAllReduce && a.coll != Collective::kAllGather && a.coll != Collective::kBroadcast &&
      a.coll != Collective::kReduce && a.coll != Collective::kReduceScatter) {
    return refuse(why, format("it has no form for %s", collectiveName(a.coll)));
  }
  if (nranks < 2) return refuse(why, "it needs two ranks");
  if (dataTypeSize(a.dtype) == 0) return refuse(why, "unknown datatype");
  const size_t bytes = shmInputBytes(a, nranks);
  if (bytes > kCmaMaxBytes) {
    return refuse(why, format("%zu input bytes per rank exceed its limit of %zu bytes", bytes, kCmaMaxBytes));
  }
  return true;
}

bool shmMappedApplies(const CollArgs& a, int nranks, std::string* why) {
  if (isAlltoAll(a.coll)) return alltoallApplies(a, nranks, why);
  if (a.coll != Collective::kAllReduce) return refuse(why, format("it has no form for %s", collectiveName(a.coll)));
  if (dataTypeSize(a.dtype) == 0) return refuse(why, "unknown datatype");
  return true;
}

bool shmApplies(ShmAlgorithm a, const CollArgs& args, int nranks, std::string* why) {
  switch (a) {
    case ShmAlgorithm::kSmall:
      return shmSmallApplies(args, nranks, why);
    case ShmAlgorithm::kPipelined:
      return shmPipelinedApplies(args, nranks, why);
    case ShmAlgorithm::kCma:
      return shmCmaApplies(args, nranks, why);
    case ShmAlgorithm::kMapped:
      return shmMappedApplies(args, nranks, why);
    default:
      return refuse(why, "not a shared-memory algorithm");
  }
}

double shmSmallCost(const CollArgs& args, int nranks, const ShmAlgorithmCost& params) {
  return predictDirectSeconds(args, nranks, true, params);
}

double shmChunkedCost(const CollArgs& args, int nranks, const ShmAlgorithmCost& params) {
  return predictDirectSeconds(args, nranks, false, params);
}

double shmSeconds(ShmAlgorithm a, const CollArgs& args, int nranks, const ShmAlgorithmCost& params) {
  if (a == ShmAlgorithm::kNone) return -1;
  return a == ShmAlgorithm::kSmall ? shmSmallCost(args, nranks, params) : shmChunkedCost(args, nranks, params);
}

}  // namespace tern::shm
