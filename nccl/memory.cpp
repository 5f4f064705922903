// Memory: ncclMemAlloc (tern's host allocator), registration, statistics; GPU memory windows, one-sided signals
// and device communicators are refused (they need GPU memory and tern's device path).
#include <cstdint>
#include <new>

#include "shim_internal.hpp"

using namespace tern::nccl;

// Host memory from tern's allocator (shared-memory backed: same-host peers read it in place).
NCCL_SHIM_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) { return fromTern(ternMemAlloc(ptr, size)); }
NCCL_SHIM_API ncclResult_t ncclMemFree(void* ptr) { return fromTern(ternMemFree(ptr)); }

// Registration is an optimisation hint; host buffers need none (tern copies or maps them per call).
NCCL_SHIM_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  const char* fn = "ncclCommRegister";
  int rank = 0, n = 0;
  SHIM_CHECK(commShape(comm, &rank, &n, fn));
  if (handle == nullptr) return fail(ncclInvalidArgument, "%s: handle is NULL", fn);
  SHIM_CHECK(checkHost(buff, size, 1, fn, "buff"));
  *handle = new (std::nothrow) char[1];
  return *handle != nullptr ? ncclSuccess : fail(ncclSystemError, "%s: out of memory", fn);
}

NCCL_SHIM_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  const char* fn = "ncclCommDeregister";
  int rank = 0, n = 0;
  SHIM_CHECK(commShape(comm, &rank, &n, fn));
  if (handle == nullptr) return fail(ncclInvalidArgument, "%s: handle is NULL", fn);
  delete[] static_cast<char*>(handle);
  return ncclSuccess;
}

// No GPU memory is allocated by a host communicator: every statistic is zero (not suspended).
NCCL_SHIM_API ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  const char* fn = "ncclCommMemStats";
  int rank = 0, n = 0;
  SHIM_CHECK(commShape(comm, &rank, &n, fn));
  if (value == nullptr) return fail(ncclInvalidArgument, "%s: value is NULL", fn);
  if (static_cast<int>(stat) < 0 || static_cast<int>(stat) > 3) {
    return fail(ncclInvalidArgument, "%s: unknown statistic %d", fn, static_cast<int>(stat));
  }
  *value = 0;
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclCommWindowRegister(ncclComm_t, void*, size_t, ncclWindow_t* win, int) {
  if (win != nullptr) *win = nullptr;
  return unsupported("ncclCommWindowRegister", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclCommWindowDeregister(ncclComm_t, ncclWindow_t) {
  return unsupported("ncclCommWindowDeregister", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclWinGetUserPtr(ncclComm_t, ncclWindow_t, void** outUserPtr) {
  if (outUserPtr != nullptr) *outUserPtr = nullptr;
  return unsupported("ncclWinGetUserPtr", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclPutSignal(const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int,
                                         unsigned int, ncclComm_t, cudaStream_t) {
  return unsupported("ncclPutSignal", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclSignal(int, int, int, unsigned int, ncclComm_t, cudaStream_t) {
  return unsupported("ncclSignal", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclWaitSignal(int, ncclWaitSignalDesc_t*, ncclComm_t, cudaStream_t) {
  return unsupported("ncclWaitSignal", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclDevCommCreate(ncclComm_t, const ncclDevCommRequirements*, ncclDevComm* outDevComm) {
  (void)outDevComm;
  return unsupported("ncclDevCommCreate", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclDevCommDestroy(ncclComm_t, const ncclDevComm*) {
  return unsupported("ncclDevCommDestroy", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t, size_t, void** outPtr) {
  if (outPtr != nullptr) *outPtr = nullptr;
  return unsupported("ncclGetLsaMultimemDevicePointer", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t, size_t, int, void** outPtr) {
  if (outPtr != nullptr) *outPtr = nullptr;
  return unsupported("ncclGetPeerDevicePointer", kDeviceOnly);
}
