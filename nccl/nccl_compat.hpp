// Declarations the shim exports beyond what an older nccl.h declares, so that it also builds against the CUDA
// toolkit's header (2.28) when the nvidia-nccl wheel's (2.30, which torch 2.15 is built against) is not at hand.
// The signatures are 2.30.7's. The device-communicator entry points live in nccl_device/core.h, which only nvcc
// can read: they are declared here with opaque types (C linkage: the names alone are the ABI).
#ifndef TERN_NCCL_COMPAT_HPP_
#define TERN_NCCL_COMPAT_HPP_

#include <nccl.h>
#include <stdint.h>

#define TERN_NCCL_HEADER_CODE (NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH)

extern "C" {

struct ncclDevComm;
struct ncclDevCommRequirements;
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs, ncclDevComm* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);

#if TERN_NCCL_HEADER_CODE < 23000
typedef enum {
  ncclStatGpuMemSuspend = 0,
  ncclStatGpuMemSuspended = 1,
  ncclStatGpuMemPersist = 2,
  ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                          ncclConfig_t* config);
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                           size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream);
#endif

}  // extern "C"

#endif  // TERN_NCCL_COMPAT_HPP_
