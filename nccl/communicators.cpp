// Communicator lifecycle: unique ids, init (alone, scalable, all ranks of one process), split, finalize, destroy,
// abort, queries; what tern cannot do to a communicator (shrink, grow, revoke, suspend) is refused with a reason.
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shim_internal.hpp"

namespace tern::nccl {

ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                      const char* fn) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm (the output) is NULL", fn);
  *comm = nullptr;
  if (groupDepth > 0) {
    return fail(ncclInvalidUsage,
                "%s inside ncclGroupStart/End is not supported: tern's init blocks until every rank joins; create "
                "communicators outside groups (or use ncclCommInitAll for several ranks in one process)",
                fn);
  }
  ternConfig_t tc;
  CommState state;
  SHIM_CHECK(translateConfig(config, &tc, &state, fn));
  ternUniqueId tid;
  static_assert(sizeof(tid.internal) == sizeof(id.internal));
  std::memcpy(tid.internal, id.internal, sizeof tid.internal);
  ternComm_t tcomm = nullptr;
  ternResult_t r = ternCommInitRankConfig(&tcomm, nranks, tid, rank, &tc);
  if (r != ternSuccess) return fromTern(r);
  addState(tcomm, std::move(state));
  *comm = toNccl(tcomm);
  return ncclSuccess;
}

}  // namespace tern::nccl

using namespace tern::nccl;

NCCL_SHIM_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  ternUniqueId id;
  ternResult_t r = ternGetUniqueId(&id);
  if (r != ternSuccess) return fromTern(r);
  std::memcpy(uniqueId->internal, id.internal, sizeof uniqueId->internal);
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

NCCL_SHIM_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                  ncclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

// Several ids speed up NCCL's bootstrap; tern's has one root, the first id's (the same on every rank).
NCCL_SHIM_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                    ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    return fail(ncclInvalidArgument, "ncclCommInitRankScalable: nId %d / commIds %p: at least one id is needed", nId,
                static_cast<void*>(commIds));
  }
  return initRank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}

// One process, ndev ranks: each rank is created on its own thread (tern's init blocks until all have joined); the
// caller then drives them from one thread inside ncclGroupStart/End, as with NCCL. devlist names CUDA devices,
// which the host path does not use: any list of ndev entries is accepted.
NCCL_SHIM_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  (void)devlist;
  if (comms == nullptr) return fail(ncclInvalidArgument, "%s: comm is NULL", fn);
  if (ndev < 1) return fail(ncclInvalidArgument, "%s: ndev %d must be at least 1", fn, ndev);
  if (groupDepth > 0) return fail(ncclInvalidUsage, "%s inside ncclGroupStart/End is not supported", fn);
  ncclUniqueId id;
  SHIM_CHECK(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> made(ndev, nullptr);
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (int r = 0; r < ndev; ++r) {
    threads.emplace_back([&, r] {
      results[r] = initRank(&made[r], ndev, id, r, nullptr, fn);
      if (results[r] != ncclSuccess) errors[r] = ncclGetLastError(nullptr);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ndev; ++r) {
    if (results[r] == ncclSuccess) continue;
    for (ncclComm_t c : made) {
      if (c != nullptr) {
        dropState(toTern(c));
        ternCommAbort(toTern(c));
      }
    }
    return fail(results[r], "%s: rank %d of %d: %s", fn, r, ndev, errors[r].c_str());
  }
  for (int r = 0; r < ndev; ++r) comms[r] = made[r];
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                         ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = nullptr;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return fail(ncclInvalidArgument, "%s: color %d (must be >= 0 or NCCL_SPLIT_NOCOLOR)", fn, color);
  }
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  CommState state;
  ternConfig_t tc = TERN_CONFIG_INITIALIZER;
  if (config != nullptr) {
    SHIM_CHECK(translateConfig(config, &tc, &state, fn));
  } else {
    // NULL: the new communicator inherits the parent's configuration.
    std::lock_guard<std::mutex> lock(statesMutex);
    auto it = states().find(toTern(comm));
    if (it != states().end()) {
      state.nonblocking = it->second.nonblocking;
      state.commName = it->second.commName;
    }
    if (!state.commName.empty()) tc.commName = state.commName.c_str();
  }
  ternComm_t out = nullptr;
  ternResult_t r = ternCommSplit(toTern(comm), color == NCCL_SPLIT_NOCOLOR ? -1 : color, key, &out, &tc);
  if (r != ternSuccess) return fromTern(r);
  if (out != nullptr) addState(out, std::move(state));
  *newcomm = toNccl(out);
  return ncclSuccess;
}

// Host calls complete before returning, so nothing is left to flush: the communicator only stops accepting work.
NCCL_SHIM_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, "ncclCommFinalize"));
  std::lock_guard<std::mutex> lock(statesMutex);
  states()[toTern(comm)].finalized = true;
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
  ternResult_t r = ternCommDestroy(toTern(comm));
  if (r == ternSuccess) dropState(toTern(comm));
  return fromTern(r);
}

// Safe from any thread while another is inside a call on comm (tern's abort wakes every wait).
NCCL_SHIM_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommAbort: comm is NULL");
  ternResult_t r = ternCommAbort(toTern(comm));
  if (r == ternSuccess) dropState(toTern(comm));
  return fromTern(r);
}

NCCL_SHIM_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (count == nullptr) return fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
  return fromTern(ternCommCount(toTern(comm), count));
}

NCCL_SHIM_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (rank == nullptr) return fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
  return fromTern(ternCommUserRank(toTern(comm), rank));
}

NCCL_SHIM_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  (void)comm;
  (void)device;
  return unsupported("ncclCommCuDevice", "a host-memory communicator has no CUDA device");
}

NCCL_SHIM_API ncclResult_t ncclCommRevoke(ncclComm_t, int) {
  return unsupported("ncclCommRevoke", "use ncclCommAbort (tern aborts, it does not revoke and reuse)");
}
NCCL_SHIM_API ncclResult_t ncclCommShrink(ncclComm_t, int*, int, ncclComm_t* newcomm, ncclConfig_t*, int) {
  if (newcomm != nullptr) *newcomm = nullptr;
  return unsupported("ncclCommShrink",
                     "tern cannot rebuild a communicator without its excluded ranks; create a new "
                     "one (ncclCommInitRank) or split one whose ranks all call (ncclCommSplit)");
}
NCCL_SHIM_API ncclResult_t ncclCommGetUniqueId(ncclComm_t, ncclUniqueId*) {
  return unsupported("ncclCommGetUniqueId", "growing communicators (ncclCommGrow) is not implemented");
}
NCCL_SHIM_API ncclResult_t ncclCommGrow(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t* newcomm, ncclConfig_t*) {
  if (newcomm != nullptr) *newcomm = nullptr;
  return unsupported("ncclCommGrow", "growing communicators is not implemented");
}
NCCL_SHIM_API ncclResult_t ncclCommSuspend(ncclComm_t, int) {
  return unsupported("ncclCommSuspend", "there is no GPU memory to release");
}
NCCL_SHIM_API ncclResult_t ncclCommResume(ncclComm_t) {
  return unsupported("ncclCommResume", "communicators are never suspended");
}
