/*
 * tern's stream-ordered calls, for buffers in CUDA device memory (or host memory), with NCCL's semantics: a call
 * enqueues the collective on `stream` and returns at once; it happens in stream order (after the work enqueued
 * before it, before the work enqueued after it), and cudaStreamSynchronize(stream) or an event waits for it.
 * Arguments and ranks as in the host calls of tern.h (counts in elements, the same calls in the same order on every
 * rank; stream-ordered and host calls on one communicator keep the order they were made in).
 *
 * Engines: the first stream-ordered call on a communicator is where its ranks agree (before it returns, so every
 * rank must make it) on what runs them: NVIDIA's NCCL for uncompressed collectives and send/receive batches on
 * device buffers when every rank can load it (TERN_DEVICE_ENGINE, TERN_NCCL_LIB) and the cost model prices it below
 * staging, otherwise, and for barriers, staging through pinned host memory over tern's host transports. The model
 * prices each rank's own GPU and links where the rank's thread had its CUDA device current when it created the
 * communicator (cudaSetDevice before ternCommInitRank, as NCCL asks too); otherwise NCCL runs unpriced. An allreduce that TERN_COMPRESS compresses runs
 * its codecs on the device (encode, decode, error feedback in device memory; only payloads are exchanged) where the
 * library was built with CUDA and every rank has device buffers, else it stages the whole tensors. The ranks agree
 * on that at the first such call of each (count, datatype); a later call of that size must keep device buffers.
 *
 * Errors: a bad argument is returned at once; a failure while the collective runs (a lost peer, a timeout, an
 * abort) fails the communicator: ternCommGetAsyncError reports it, ternGetLastError says what happened, and the
 * stream goes on (the results are then undefined), so a stream never waits forever on tern.
 *
 * Staging: device buffers are copied into pinned host memory on the stream, and the collective runs over tern's
 * host transports (any of them, compression included). Needs the CUDA driver (libcuda.so.1, CUDA 12 or newer),
 * loaded at the first call; libtern itself links no CUDA library. With NCCL running a communicator's calls, their
 * buffers must be device memory on every rank.
 * Inside ternGroupStart/ternGroupEnd they are recorded and enqueued when the group ends; sends and receives to and
 * from peers on one stream then run as one batch, as NCCL's grouped point-to-point calls do.
 *
 * This header needs no CUDA header: it declares cudaStream_t exactly as CUDA's driver_types.h does (a pointer to
 * struct CUstream_st), so it can come before or after the CUDA headers (C11 and C++ accept the repeated typedef),
 * and tern.h alone never involves CUDA at all.
 */
#ifndef TERN_TERN_CUDA_H_
#define TERN_TERN_CUDA_H_

#include "tern/tern.h"

#ifndef __DRIVER_TYPES_H__
struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;
#endif

#ifdef __cplusplus
extern "C" {
#endif

ternResult_t ternAllReduceOnStream(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                                   ternRedOp_t op, ternComm_t comm, cudaStream_t stream);
ternResult_t ternAllGatherOnStream(const void* sendbuff, void* recvbuff, size_t sendcount, ternDataType_t datatype,
                                   ternComm_t comm, cudaStream_t stream);
ternResult_t ternReduceScatterOnStream(const void* sendbuff, void* recvbuff, size_t recvcount, ternDataType_t datatype,
                                       ternRedOp_t op, ternComm_t comm, cudaStream_t stream);
/** sendbuff is read on root only. */
ternResult_t ternBroadcastOnStream(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                                   int root, ternComm_t comm, cudaStream_t stream);
/** recvbuff is written on root only. */
ternResult_t ternReduceOnStream(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                                ternRedOp_t op, int root, ternComm_t comm, cudaStream_t stream);
ternResult_t ternAlltoAllOnStream(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                                  ternComm_t comm, cudaStream_t stream);
ternResult_t ternAlltoAllvOnStream(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                   void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                   ternDataType_t datatype, ternComm_t comm, cudaStream_t stream);
ternResult_t ternSendOnStream(const void* sendbuff, size_t count, ternDataType_t datatype, int peer, ternComm_t comm,
                              cudaStream_t stream);
ternResult_t ternRecvOnStream(void* recvbuff, size_t count, ternDataType_t datatype, int peer, ternComm_t comm,
                              cudaStream_t stream);
/** Every rank's stream reaches the barrier before any rank's stream goes past it. */
ternResult_t ternBarrierOnStream(ternComm_t comm, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* TERN_TERN_CUDA_H_ */
