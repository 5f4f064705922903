// The tern calls the backend's bodies make, host or stream-ordered. A body runs with host tensors on the process
// group's worker thread and calls tern's host API; with CUDA tensors it runs on the caller's thread inside a
// StreamScope and the same calls go to tern's stream-ordered API (tern/tern_cuda.h) on the caller's current CUDA
// stream, as NCCL's do: enqueued in stream order, returning at once. The bodies' own tensor operations (staging
// copies, PREMUL_SUM factors, the copies back into non-contiguous outputs) run on that same current stream, so
// everything the call does is ordered on the stream the caller's kernels use.
//
// The current stream comes from c10's device-generic stream API (c10::Stream::native_handle), so the extension
// links no CUDA library and builds against any torch; without a CUDA torch no tensor is ever on a CUDA device.
#pragma once

#include <c10/core/Device.h>

#include "tern/tern.h"

namespace tern::torch_backend {

// While alive, the calls below on this thread go to the stream-ordered API on `device`'s current stream.
class StreamScope {
 public:
  explicit StreamScope(const c10::Device& device);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  void* previous_;
};

// The stream the calls of this thread go to (nullptr: host calls).
void* activeStream();

namespace calls {
ternResult_t allReduce(const void* send, void* recv, size_t count, ternDataType_t type, ternRedOp_t op,
                       ternComm_t comm);
ternResult_t broadcast(const void* send, void* recv, size_t count, ternDataType_t type, int root, ternComm_t comm);
ternResult_t reduce(const void* send, void* recv, size_t count, ternDataType_t type, ternRedOp_t op, int root,
                    ternComm_t comm);
ternResult_t allGather(const void* send, void* recv, size_t sendCount, ternDataType_t type, ternComm_t comm);
ternResult_t reduceScatter(const void* send, void* recv, size_t recvCount, ternDataType_t type, ternRedOp_t op,
                           ternComm_t comm);
ternResult_t alltoAll(const void* send, void* recv, size_t count, ternDataType_t type, ternComm_t comm);
ternResult_t alltoAllv(const void* send, const size_t sendCounts[], const size_t sendDispls[], void* recv,
                       const size_t recvCounts[], const size_t recvDispls[], ternDataType_t type, ternComm_t comm);
ternResult_t send(const void* buf, size_t count, ternDataType_t type, int peer, ternComm_t comm);
ternResult_t recv(void* buf, size_t count, ternDataType_t type, int peer, ternComm_t comm);
ternResult_t barrier(ternComm_t comm);
}  // namespace calls

}  // namespace tern::torch_backend
