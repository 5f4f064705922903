// The shim's per-communicator state (beside tern's handle) and the argument checks every entry point runs.
#include <cstdint>
#include <map>
#include <mutex>

#include "buffer_kind.hpp"
#include "shim_internal.hpp"

namespace tern::nccl {

std::mutex statesMutex;
std::map<ternComm_t, CommState>& states() {
  static auto* m = new std::map<ternComm_t, CommState>();  // never freed: calls may come from exit handlers
  return *m;
}

void addState(ternComm_t c, CommState s) {
  std::lock_guard<std::mutex> lock(statesMutex);
  states()[c] = std::move(s);
}
void dropState(ternComm_t c) {
  std::lock_guard<std::mutex> lock(statesMutex);
  states().erase(c);
}
bool finalized(ternComm_t c) {
  std::lock_guard<std::mutex> lock(statesMutex);
  auto it = states().find(c);
  return it != states().end() && it->second.finalized;
}

size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

// Datatype check ahead of tern's, to name the NCCL types tern has no kernels for.
ncclResult_t checkType(ncclDataType_t t, const char* fn) {
  if (static_cast<int>(t) == 10 || static_cast<int>(t) == 11) {
    return fail(ncclInvalidArgument, "%s: fp8 datatypes (ncclFloat8e4m3/ncclFloat8e5m2) are not supported by tern", fn);
  }
  if (typeSize(t) == 0) return fail(ncclInvalidArgument, "%s: invalid datatype %d", fn, static_cast<int>(t));
  return ncclSuccess;
}

// The one place that routes by memory kind: host buffers go to tern's host calls, device buffers to its
// stream-ordered calls (tern_cuda.h) on the caller's stream.
ncclResult_t checkBuffer(const void* p, size_t count, size_t elementBytes, const char* fn, const char* what,
                         bool* onDevice) {
  if (count != 0 && elementBytes != 0 && count > SIZE_MAX / elementBytes) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of %s", fn, count, what);
  }
  if (classifyBuffer(p, count * elementBytes) == BufferKind::kDevice) *onDevice = true;
  return ncclSuccess;
}

ncclResult_t builtInOnDevice(ncclRedOp_t op, const char* fn) {
  if (static_cast<int>(op) >= 0 && static_cast<int>(op) < ncclNumOps) return ncclSuccess;
  return fail(ncclInvalidUsage,
              "%s: a PreMulSum reduction (ncclRedOpCreatePreMulSum) on device buffers is not supported by tern yet; "
              "scale the input first and use ncclSum",
              fn);
}

// Host memory only (registration of host buffers).
ncclResult_t checkHost(const void* p, size_t count, size_t elementBytes, const char* fn, const char* what) {
  if (count != 0 && elementBytes != 0 && count > SIZE_MAX / elementBytes) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of %s", fn, count, what);
  }
  if (classifyBuffer(p, count * elementBytes) == BufferKind::kDevice) {
    return fail(ncclInvalidUsage,
                "%s: %s %p is not host memory (a CUDA device buffer?): device buffers need tern's device path (not "
                "built); this libnccl.so.2 runs host buffers only",
                fn, what, p);
  }
  return ncclSuccess;
}

// Rank and size of comm, with tern's messages for bad handles.
ncclResult_t commShape(ncclComm_t comm, int* rank, int* size, const char* fn) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm is NULL", fn);
  ternResult_t r = ternCommUserRank(toTern(comm), rank);
  if (r == ternSuccess) r = ternCommCount(toTern(comm), size);
  if (r != ternSuccess) return fromTern(r);
  if (finalized(toTern(comm))) {
    return fail(ncclInvalidUsage, "%s: comm %p was finalized (ncclCommFinalize); only ncclCommDestroy may follow", fn,
                static_cast<void*>(comm));
  }
  return ncclSuccess;
}

}  // namespace tern::nccl
