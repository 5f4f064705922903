// libnccl.so.2: NCCL's C ABI on tern's public API, so that a program built for NCCL (PyTorch's libtorch_cuda.so)
// runs on tern when this library is preloaded. Host buffers go through tern's host path and complete before the
// call returns (the stream argument is not used: there is nothing to enqueue on it). Device buffers are refused in
// one place (classifyBuffer) until tern's device path exists. Result, datatype and op values are NCCL's own in
// tern.h, so they pass through unchanged; what tern cannot do returns ncclInvalidUsage with ncclGetLastError
// saying what, never an abort. docs/NCCL.md lists what is mapped, refused or harmless.
//
// What the shim's files share: the handle mapping, the error helpers, the per-communicator state kept beside
// tern's handle, the argument checks every entry point runs, and the per-thread group state.
#ifndef TERN_NCCL_SHIM_INTERNAL_HPP_
#define TERN_NCCL_SHIM_INTERNAL_HPP_

#include <nccl.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_compat.hpp"
#include "tern/tern.h"

#define NCCL_SHIM_API extern "C" __attribute__((visibility("default")))

#define SHIM_CHECK(expr)                        \
  do {                                          \
    ncclResult_t shim_r_ = (expr);              \
    if (shim_r_ != ncclSuccess) return shim_r_; \
  } while (0)

namespace tern::nccl {

// ncclComm_t is tern's handle itself: tern validates it (null, destroyed, foreign) and reports misuse.
inline ternComm_t toTern(ncclComm_t c) { return reinterpret_cast<ternComm_t>(c); }
inline ncclComm_t toNccl(ternComm_t c) { return reinterpret_cast<ncclComm_t>(c); }
inline ncclResult_t toNccl(ternResult_t r) { return static_cast<ncclResult_t>(r); }

// ---- errors (errors.cpp) ----

// An error raised by the shim itself: its message becomes this thread's latest (ncclGetLastError).
ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// A result from tern: its message is the latest one.
ncclResult_t fromTern(ternResult_t r);
// The message ncclGetLastError(comm) returns on this thread, as a copy for another thread to report.
std::string lastError(ncclComm_t comm);
// An entry point tern cannot serve: ncclInvalidUsage, saying why.
ncclResult_t unsupported(const char* fn, const char* why);

inline constexpr const char* kDeviceOnly = "it needs GPU memory and tern's device path, which is not built";

// ---- per-communicator state (comm_state.cpp) ----

// A built-in or a PreMulSum op (ncclRedOpCreatePreMulSum): the scalar is read at creation (host-immediate).
struct PreMulSum {
  bool live = false;
  ncclDataType_t dtype = ncclFloat32;
  double scalar = 0;        // floating-point types
  long long scalarInt = 0;  // signed integer types
  unsigned long long scalarUint = 0;
};

// Per-communicator state the NCCL ABI needs beyond tern's: kept beside tern's handle, keyed by it.
struct CommState {
  bool nonblocking = false;
  bool finalized = false;
  std::string commName;
  std::vector<PreMulSum> ops;  // op value ncclNumOps + index
};

extern std::mutex statesMutex;
std::map<ternComm_t, CommState>& states();  // guarded by statesMutex
void addState(ternComm_t c, CommState s);
void dropState(ternComm_t c);
bool finalized(ternComm_t c);

// ---- argument checks (comm_state.cpp) ----

size_t typeSize(ncclDataType_t t);
// Datatype check ahead of tern's, to name the NCCL types tern has no kernels for.
ncclResult_t checkType(ncclDataType_t t, const char* fn);
// The one place that routes by memory kind: host buffers continue to tern's host path.
ncclResult_t checkHost(const void* p, size_t count, size_t elementBytes, const char* fn, const char* what);
// Checks a collective's buffer and sets *onDevice when it is CUDA device memory (the call then goes to tern's
// stream-ordered calls); a PreMulSum op is refused on device buffers (builtInOnDevice).
ncclResult_t checkBuffer(const void* p, size_t count, size_t elementBytes, const char* fn, const char* what,
                         bool* onDevice);
ncclResult_t builtInOnDevice(ncclRedOp_t op, const char* fn);
// Rank and size of comm, with tern's messages for bad handles.
ncclResult_t commShape(ncclComm_t comm, int* rank, int* size, const char* fn);

// ---- config (config.cpp) ----

// Translates an NCCL config into tern's plus the shim's state; fields tern cannot honour are refused by name.
ncclResult_t translateConfig(const ncclConfig_t* userConfig, ternConfig_t* out, CommState* state, const char* fn);

// ---- communicator creation (communicators.cpp) ----

ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                      const char* fn);

// ---- reduction operators (reduction_ops.cpp) ----

// Resolves op for a reduction over dtype on comm: built-in ops pass through; a PreMulSum op returns ncclSum and
// *scaledInput points at the scaled copy of input (count elements), owned by *holder.
ncclResult_t resolveOp(ncclRedOp_t op, ncclDataType_t dtype, const void* input, size_t count, ncclComm_t comm,
                       const char* fn, ternRedOp_t* ternOp, const void** scaledInput, std::unique_ptr<char[]>* holder);
// Runs a tern call whose input may be a PreMulSum scratch copy: inside a group the copy lives until GroupEnd.
ncclResult_t runWithScratch(ternResult_t r, std::unique_ptr<char[]> scratch);

// ---- groups (groups.cpp) ----

// Group depth of this thread (ncclGroupStart/End are per thread, as tern's groups). Scaled copies of PreMulSum
// inputs recorded inside a group must live until the outermost ncclGroupEnd runs them.
extern thread_local int groupDepth;
extern thread_local std::vector<std::unique_ptr<char[]>> groupScratch;

// A communicator creation (init, split, shrink) called inside a group: tern's creations block until every member
// joins, and NCCL lets one thread create several members in one group, so it runs at the outermost ncclGroupEnd,
// concurrently with the group's other creations. parent is the communicator a split or shrink uses (NULL for an
// init). create returns the creation's result (its message on that thread); description names it in
// ncclGroupEnd's error.
void deferCreation(std::string description, ncclComm_t parent, std::function<ncclResult_t()> create);

}  // namespace tern::nccl

#endif  // TERN_NCCL_SHIM_INTERNAL_HPP_
