#include "algorithms/shm/shm_catalogue.hpp"

#include <algorithm>

#include "algorithms/shm/direct_cost.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "planner/cost_params.hpp"
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
  return a.coll == Collective::kReduceScatter ? a.count * e * static_cast<size_t>(n) : a.count * e;
}

size_t shmOutputBytes(const CollArgs& a, int n) {
  const size_t e = dataTypeSize(a.dtype);
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

ShmAlgorithm defaultShmAlgorithm(const CollArgs& a, int nranks) {
  if (a.coll == Collective::kBarrier) return ShmAlgorithm::kSmall;
  if (!isDirectDataCollective(a.coll) || dataTypeSize(a.dtype) == 0) return ShmAlgorithm::kNone;
  return shmInputBytes(a, nranks) <= shmSmallLimit(a.coll, nranks) ? ShmAlgorithm::kSmall : ShmAlgorithm::kPipelined;
}

bool shmSmallApplies(const CollArgs& a, int nranks, std::string* why) {
  if (a.coll == Collective::kBarrier) return true;
  if (!isDirectDataCollective(a.coll)) return refuse(why, format("it has no form for %s", collectiveName(a.coll)));
  if (dataTypeSize(a.dtype) == 0) return refuse(why, "unknown datatype");
  const size_t bytes = shmInputBytes(a, nranks);
  if (bytes > kSmallBytes) {
    return refuse(why, format("%zu input bytes per rank exceed its small area of %zu bytes", bytes, kSmallBytes));
  }
  return true;
}

bool shmPipelinedApplies(const CollArgs& a, int, std::string* why) {
  if (!isDirectDataCollective(a.coll)) return refuse(why, format("it has no form for %s", collectiveName(a.coll)));
  if (dataTypeSize(a.dtype) == 0) return refuse(why, "unknown datatype");
  return true;
}

bool shmCmaApplies(const CollArgs& a, int nranks, std::string* why) {
  if (a.coll != Collective::kAllReduce && a.coll != Collective::kAllGather && a.coll != Collective::kBroadcast) {
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

bool shmMappedApplies(const CollArgs& a, int, std::string* why) {
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

double shmSmallCost(const CollArgs& args, int nranks, const planner::CostParams& params) {
  return predictDirectSeconds(args, nranks, true, params.shmAlgorithms);
}

double shmChunkedCost(const CollArgs& args, int nranks, const planner::CostParams& params) {
  return predictDirectSeconds(args, nranks, false, params.shmAlgorithms);
}

double shmSeconds(ShmAlgorithm a, const CollArgs& args, int nranks, const planner::CostParams& params) {
  if (a == ShmAlgorithm::kNone) return -1;
  return a == ShmAlgorithm::kSmall ? shmSmallCost(args, nranks, params) : shmChunkedCost(args, nranks, params);
}

}  // namespace tern::shm
