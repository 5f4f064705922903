// The stream-ordered calls of tern_cuda.h for tests: the public header where the CUDA headers are installed (so
// that a signature change breaks the build), otherwise the same declarations with CUDA's cudaStream_t type
// (`struct CUstream_st*`), for machines that test the device path without CUDA (tests/unit/host_streams.hpp).
#pragma once

#include "tern/tern.h"

#if TERN_HAVE_CUDA_HEADERS
#include "tern/tern_cuda.h"
#else
struct CUstream_st;
using cudaStream_t = CUstream_st*;
extern "C" {
ternResult_t ternAllReduceOnStream(const void*, void*, size_t, ternDataType_t, ternRedOp_t, ternComm_t, cudaStream_t);
ternResult_t ternAllGatherOnStream(const void*, void*, size_t, ternDataType_t, ternComm_t, cudaStream_t);
ternResult_t ternReduceScatterOnStream(const void*, void*, size_t, ternDataType_t, ternRedOp_t, ternComm_t,
                                       cudaStream_t);
ternResult_t ternBroadcastOnStream(const void*, void*, size_t, ternDataType_t, int, ternComm_t, cudaStream_t);
ternResult_t ternReduceOnStream(const void*, void*, size_t, ternDataType_t, ternRedOp_t, int, ternComm_t, cudaStream_t);
ternResult_t ternAlltoAllOnStream(const void*, void*, size_t, ternDataType_t, ternComm_t, cudaStream_t);
ternResult_t ternAlltoAllvOnStream(const void*, const size_t[], const size_t[], void*, const size_t[], const size_t[],
                                   ternDataType_t, ternComm_t, cudaStream_t);
ternResult_t ternSendOnStream(const void*, size_t, ternDataType_t, int, ternComm_t, cudaStream_t);
ternResult_t ternRecvOnStream(void*, size_t, ternDataType_t, int, ternComm_t, cudaStream_t);
ternResult_t ternBarrierOnStream(ternComm_t, cudaStream_t);
}
#endif
