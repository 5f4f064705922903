#include "stream_calls.hpp"

#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "tern/tern_cuda.h"

namespace tern::torch_backend {

namespace {

thread_local void* tlsStream = nullptr;

cudaStream_t active() { return static_cast<cudaStream_t>(tlsStream); }

}  // namespace

StreamScope::StreamScope(const c10::Device& device) : previous_(tlsStream) {
  const c10::impl::VirtualGuardImpl guard(device.type());
  tlsStream = guard.getStream(device).native_handle();
}

StreamScope::~StreamScope() { tlsStream = previous_; }

void* activeStream() { return tlsStream; }

namespace calls {

ternResult_t allReduce(const void* send, void* recv, size_t count, ternDataType_t type, ternRedOp_t op,
                       ternComm_t comm) {
  if (tlsStream != nullptr) return ternAllReduceOnStream(send, recv, count, type, op, comm, active());
  return ternAllReduce(send, recv, count, type, op, comm);
}

ternResult_t broadcast(const void* send, void* recv, size_t count, ternDataType_t type, int root, ternComm_t comm) {
  if (tlsStream != nullptr) return ternBroadcastOnStream(send, recv, count, type, root, comm, active());
  return ternBroadcast(send, recv, count, type, root, comm);
}

ternResult_t reduce(const void* send, void* recv, size_t count, ternDataType_t type, ternRedOp_t op, int root,
                    ternComm_t comm) {
  if (tlsStream != nullptr) return ternReduceOnStream(send, recv, count, type, op, root, comm, active());
  return ternReduce(send, recv, count, type, op, root, comm);
}

ternResult_t allGather(const void* send, void* recv, size_t sendCount, ternDataType_t type, ternComm_t comm) {
  if (tlsStream != nullptr) return ternAllGatherOnStream(send, recv, sendCount, type, comm, active());
  return ternAllGather(send, recv, sendCount, type, comm);
}

ternResult_t reduceScatter(const void* send, void* recv, size_t recvCount, ternDataType_t type, ternRedOp_t op,
                           ternComm_t comm) {
  if (tlsStream != nullptr) return ternReduceScatterOnStream(send, recv, recvCount, type, op, comm, active());
  return ternReduceScatter(send, recv, recvCount, type, op, comm);
}

ternResult_t alltoAll(const void* send, void* recv, size_t count, ternDataType_t type, ternComm_t comm) {
  if (tlsStream != nullptr) return ternAlltoAllOnStream(send, recv, count, type, comm, active());
  return ternAlltoAll(send, recv, count, type, comm);
}

ternResult_t alltoAllv(const void* send, const size_t sendCounts[], const size_t sendDispls[], void* recv,
                       const size_t recvCounts[], const size_t recvDispls[], ternDataType_t type, ternComm_t comm) {
  if (tlsStream != nullptr) {
    return ternAlltoAllvOnStream(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, comm, active());
  }
  return ternAlltoAllv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, comm);
}

ternResult_t send(const void* buf, size_t count, ternDataType_t type, int peer, ternComm_t comm) {
  if (tlsStream != nullptr) return ternSendOnStream(buf, count, type, peer, comm, active());
  return ternSend(buf, count, type, peer, comm);
}

ternResult_t recv(void* buf, size_t count, ternDataType_t type, int peer, ternComm_t comm) {
  if (tlsStream != nullptr) return ternRecvOnStream(buf, count, type, peer, comm, active());
  return ternRecv(buf, count, type, peer, comm);
}

ternResult_t barrier(ternComm_t comm) {
  if (tlsStream != nullptr) return ternBarrierOnStream(comm, active());
  return ternBarrier(comm);
}

}  // namespace calls

}  // namespace tern::torch_backend
