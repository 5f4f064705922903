// Communicator lifecycle: unique ids, init (alone, scalable, all ranks of one process), split, shrink, finalize,
// destroy, abort, queries; what tern cannot do to a communicator (grow, revoke, suspend) is refused with a reason.
// Inside a group, init, split and shrink run at the outermost ncclGroupEnd (groups.cpp).
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "shim_internal.hpp"

namespace tern::nccl {

namespace {

// translateConfig points tc at the name kept in state: a creation that carries both elsewhere points it again.
void pointAtName(ternConfig_t* tc, const CommState& state) {
  tc->commName = state.commName.empty() ? TERN_CONFIG_UNDEF_PTR : state.commName.c_str();
}

// The configuration of a communicator made from parent (split, shrink): config's, or with NULL the parent's
// (blocking mode, name), as NCCL does.
ncclResult_t childConfig(ncclComm_t parent, const ncclConfig_t* config, ternConfig_t* tc, CommState* state,
                         const char* fn) {
  *tc = TERN_CONFIG_INITIALIZER;
  if (config != nullptr) return translateConfig(config, tc, state, fn);
  std::lock_guard<std::mutex> lock(statesMutex);
  auto it = states().find(toTern(parent));
  if (it != states().end()) {
    state->nonblocking = it->second.nonblocking;
    state->commName = it->second.commName;
  }
  pointAtName(tc, *state);
  return ncclSuccess;
}

// Runs create now, or, inside a group, at the outermost ncclGroupEnd (*out stays NULL until then).
ncclResult_t createNowOrAtGroupEnd(std::string description, ncclComm_t parent, std::function<ncclResult_t()> create) {
  if (groupDepth == 0) return create();
  deferCreation(std::move(description), parent, std::move(create));
  return ncclSuccess;
}

// A shrink is a split in which the excluded ranks take no part, and tern's split is collective over the whole
// parent. So the survivors make the new communicator among themselves: the first survivor creates a unique id
// and sends it to the others over the parent (point-to-point between survivors only), then every survivor joins
// it with its place among the survivors as its rank.
ncclResult_t shrinkInto(ternComm_t parent, const std::vector<int>& survivors, int newRank, ternConfig_t tc,
                        CommState state, ncclComm_t* newcomm, const char* fn) {
  pointAtName(&tc, state);
  const int leader = survivors[0];
  ternUniqueId id;
  std::memset(&id, 0, sizeof id);
  ternResult_t r = ternSuccess;
  if (newRank == 0) {
    r = ternGetUniqueId(&id);
    if (r != ternSuccess) return fromTern(r);
    if (survivors.size() > 1 && (r = ternGroupStart()) == ternSuccess) {
      for (size_t i = 1; i < survivors.size() && r == ternSuccess; ++i) {
        r = ternSend(id.internal, sizeof id.internal, ternUint8, survivors[i], parent);
      }
      const ternResult_t end = ternGroupEnd();
      if (r == ternSuccess) r = end;
    }
  } else {
    r = ternRecv(id.internal, sizeof id.internal, ternUint8, leader, parent);
  }
  if (r != ternSuccess) {
    fromTern(r);  // tern's message, read just below, is this thread's latest
    return fail(toNccl(r), "%s: the survivors could not agree on the new communicator over the parent: %s", fn,
                lastError(toNccl(parent)).c_str());
  }
  ternComm_t out = nullptr;
  r = ternCommInitRankConfig(&out, static_cast<int>(survivors.size()), id, newRank, &tc);
  if (r != ternSuccess) return fromTern(r);
  addState(out, std::move(state));
  *newcomm = toNccl(out);
  return ncclSuccess;
}

}  // namespace

ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                      const char* fn) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm (the output) is NULL", fn);
  *comm = nullptr;
  // Checked at the call, as NCCL does, so that a group reports them before anything waits.
  if (nranks < 1) return fail(ncclInvalidArgument, "%s: nranks %d must be at least 1", fn, nranks);
  if (rank < 0 || rank >= nranks) {
    return fail(ncclInvalidArgument, "%s: rank %d out of range [0, %d)", fn, rank, nranks);
  }
  ternConfig_t tc;
  CommState state;
  SHIM_CHECK(translateConfig(config, &tc, &state, fn));
  ternUniqueId tid;
  static_assert(sizeof(tid.internal) == sizeof(id.internal));
  std::memcpy(tid.internal, id.internal, sizeof tid.internal);
  auto create = [comm, nranks, tid, rank, tc, state]() mutable -> ncclResult_t {
    pointAtName(&tc, state);
    ternComm_t tcomm = nullptr;
    ternResult_t r = ternCommInitRankConfig(&tcomm, nranks, tid, rank, &tc);
    if (r != ternSuccess) return fromTern(r);
    addState(tcomm, std::move(state));
    *comm = toNccl(tcomm);
    return ncclSuccess;
  };
  return createNowOrAtGroupEnd(std::string(fn) + " of rank " + std::to_string(rank) + " of " + std::to_string(nranks),
                               nullptr, std::move(create));
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
      if (results[r] != ncclSuccess) errors[r] = lastError(nullptr);
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
  ternConfig_t tc;
  SHIM_CHECK(childConfig(comm, config, &tc, &state, fn));
  const int ternColor = color == NCCL_SPLIT_NOCOLOR ? -1 : color;
  auto create = [comm, ternColor, key, newcomm, tc, state]() mutable -> ncclResult_t {
    pointAtName(&tc, state);
    ternComm_t out = nullptr;
    ternResult_t r = ternCommSplit(toTern(comm), ternColor, key, &out, &tc);
    if (r != ternSuccess) return fromTern(r);
    if (out != nullptr) addState(out, std::move(state));
    *newcomm = toNccl(out);
    return ncclSuccess;
  };
  return createNowOrAtGroupEnd(std::string(fn) + " of rank " + std::to_string(rank), comm, std::move(create));
}

// The excluded ranks do not call (NCCL's contract); the survivors keep their order. NCCL_SHRINK_ABORT first ends
// the parent's outstanding operations: on the host path none is left once a call returns, so it shrinks as the
// default does, as long as the parent can still carry the survivors' exchange (it cannot once it has failed).
NCCL_SHIM_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                          ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  const char* fn = "ncclCommShrink";
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = nullptr;
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    return fail(ncclInvalidArgument, "%s: shrinkFlags 0x%x (NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT)", fn,
                static_cast<unsigned>(shrinkFlags));
  }
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return fail(ncclInvalidArgument, "%s: excludeRanksList %p with excludeRanksCount %d", fn,
                static_cast<void*>(excludeRanksList), excludeRanksCount);
  }
  std::vector<bool> excluded(static_cast<size_t>(size), false);
  for (int i = 0; i < excludeRanksCount; ++i) {
    const int r = excludeRanksList[i];
    if (r < 0 || r >= size) return fail(ncclInvalidArgument, "%s: excluded rank %d out of range [0, %d)", fn, r, size);
    if (excluded[r]) return fail(ncclInvalidArgument, "%s: rank %d is excluded twice", fn, r);
    excluded[r] = true;
  }
  if (excluded[rank]) {
    return fail(ncclInvalidArgument, "%s: rank %d is in excludeRanksList: excluded ranks do not call ncclCommShrink",
                fn, rank);
  }
  ternResult_t parentState = ternSuccess;
  if (ternCommGetAsyncError(toTern(comm), &parentState) == ternSuccess && parentState != ternSuccess &&
      parentState != ternInProgress) {
    return fail(ncclInvalidUsage,
                "%s: the parent communicator has failed (%s); tern's shrink needs the parent's connections between "
                "the survivors to agree on the new communicator: create a new one with ncclCommInitRank",
                fn, ternGetErrorString(parentState));
  }
  std::vector<int> survivors;
  int newRank = -1;
  for (int r = 0; r < size; ++r) {
    if (excluded[r]) continue;
    if (r == rank) newRank = static_cast<int>(survivors.size());
    survivors.push_back(r);
  }
  CommState state;
  ternConfig_t tc;
  SHIM_CHECK(childConfig(comm, config, &tc, &state, fn));
  ternComm_t parent = toTern(comm);
  auto create = [parent, survivors, newRank, tc, state, newcomm, fn]() mutable -> ncclResult_t {
    return shrinkInto(parent, survivors, newRank, tc, std::move(state), newcomm, fn);
  };
  return createNowOrAtGroupEnd(std::string(fn) + " of rank " + std::to_string(rank), comm, std::move(create));
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
