// Collectives and point-to-point. Host buffers: each completes before returning, the stream unused. Device buffers:
// tern's stream-ordered calls (tern_cuda.h), enqueued on the stream as NCCL's are.
#include <cstdint>
#include <memory>

#include "shim_internal.hpp"
#include "tern/tern_cuda.h"

using namespace tern::nccl;

NCCL_SHIM_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclAllReduce";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  SHIM_CHECK(checkBuffer(sendbuff, count, typeSize(datatype), fn, "sendbuff", &device));
  SHIM_CHECK(checkBuffer(recvbuff, count, typeSize(datatype), fn, "recvbuff", &device));
  if (device) {
    SHIM_CHECK(builtInOnDevice(op, fn));
    return fromTern(ternAllReduceOnStream(sendbuff, recvbuff, count, static_cast<ternDataType_t>(datatype),
                                          static_cast<ternRedOp_t>(op), toTern(comm), stream));
  }
  ternRedOp_t top;
  const void* input = nullptr;
  std::unique_ptr<char[]> scratch;
  SHIM_CHECK(resolveOp(op, datatype, sendbuff, count, comm, fn, &top, &input, &scratch));
  return runWithScratch(ternAllReduce(input, recvbuff, count, static_cast<ternDataType_t>(datatype), top, toTern(comm)),
                        std::move(scratch));
}

NCCL_SHIM_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclReduce";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  if (root < 0 || root >= size) return fail(ncclInvalidArgument, "%s: root %d out of range [0, %d)", fn, root, size);
  SHIM_CHECK(checkBuffer(sendbuff, count, typeSize(datatype), fn, "sendbuff", &device));
  if (rank == root) SHIM_CHECK(checkBuffer(recvbuff, count, typeSize(datatype), fn, "recvbuff", &device));
  if (device) {
    SHIM_CHECK(builtInOnDevice(op, fn));
    return fromTern(ternReduceOnStream(sendbuff, recvbuff, count, static_cast<ternDataType_t>(datatype),
                                       static_cast<ternRedOp_t>(op), root, toTern(comm), stream));
  }
  ternRedOp_t top;
  const void* input = nullptr;
  std::unique_ptr<char[]> scratch;
  SHIM_CHECK(resolveOp(op, datatype, sendbuff, count, comm, fn, &top, &input, &scratch));
  return runWithScratch(
      ternReduce(input, recvbuff, count, static_cast<ternDataType_t>(datatype), top, root, toTern(comm)),
      std::move(scratch));
}

NCCL_SHIM_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                             cudaStream_t stream) {
  const char* fn = "ncclReduceScatter";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  if (recvcount > SIZE_MAX / static_cast<size_t>(size)) {
    return fail(ncclInvalidArgument, "%s: recvcount %zu overflows the size of sendbuff", fn, recvcount);
  }
  const size_t sendcount = recvcount * static_cast<size_t>(size);
  SHIM_CHECK(checkBuffer(sendbuff, sendcount, typeSize(datatype), fn, "sendbuff", &device));
  SHIM_CHECK(checkBuffer(recvbuff, recvcount, typeSize(datatype), fn, "recvbuff", &device));
  if (device) {
    SHIM_CHECK(builtInOnDevice(op, fn));
    return fromTern(ternReduceScatterOnStream(sendbuff, recvbuff, recvcount, static_cast<ternDataType_t>(datatype),
                                              static_cast<ternRedOp_t>(op), toTern(comm), stream));
  }
  ternRedOp_t top;
  const void* input = nullptr;
  std::unique_ptr<char[]> scratch;
  SHIM_CHECK(resolveOp(op, datatype, sendbuff, sendcount, comm, fn, &top, &input, &scratch));
  return runWithScratch(
      ternReduceScatter(input, recvbuff, recvcount, static_cast<ternDataType_t>(datatype), top, toTern(comm)),
      std::move(scratch));
}

NCCL_SHIM_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclAllGather";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  if (sendcount > SIZE_MAX / static_cast<size_t>(size)) {
    return fail(ncclInvalidArgument, "%s: sendcount %zu overflows the size of recvbuff", fn, sendcount);
  }
  SHIM_CHECK(checkBuffer(sendbuff, sendcount, typeSize(datatype), fn, "sendbuff", &device));
  SHIM_CHECK(checkBuffer(recvbuff, sendcount * size, typeSize(datatype), fn, "recvbuff", &device));
  if (device) {
    return fromTern(ternAllGatherOnStream(sendbuff, recvbuff, sendcount, static_cast<ternDataType_t>(datatype),
                                          toTern(comm), stream));
  }
  return fromTern(ternAllGather(sendbuff, recvbuff, sendcount, static_cast<ternDataType_t>(datatype), toTern(comm)));
}

NCCL_SHIM_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         int root, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclBroadcast";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  if (root < 0 || root >= size) return fail(ncclInvalidArgument, "%s: root %d out of range [0, %d)", fn, root, size);
  if (rank == root) SHIM_CHECK(checkBuffer(sendbuff, count, typeSize(datatype), fn, "sendbuff", &device));
  SHIM_CHECK(checkBuffer(recvbuff, count, typeSize(datatype), fn, "recvbuff", &device));
  if (device) {
    return fromTern(ternBroadcastOnStream(sendbuff, recvbuff, count, static_cast<ternDataType_t>(datatype), root,
                                          toTern(comm), stream));
  }
  return fromTern(ternBroadcast(sendbuff, recvbuff, count, static_cast<ternDataType_t>(datatype), root, toTern(comm)));
}

NCCL_SHIM_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_SHIM_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclAlltoAll";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  if (count > SIZE_MAX / static_cast<size_t>(size)) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of the buffers", fn, count);
  }
  SHIM_CHECK(checkBuffer(sendbuff, count * size, typeSize(datatype), fn, "sendbuff", &device));
  SHIM_CHECK(checkBuffer(recvbuff, count * size, typeSize(datatype), fn, "recvbuff", &device));
  if (device)
    return fromTern(
        ternAlltoAllOnStream(sendbuff, recvbuff, count, static_cast<ternDataType_t>(datatype), toTern(comm), stream));
  return fromTern(ternAlltoAll(sendbuff, recvbuff, count, static_cast<ternDataType_t>(datatype), toTern(comm)));
}

NCCL_SHIM_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                    ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclSend";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  SHIM_CHECK(checkBuffer(sendbuff, count, typeSize(datatype), fn, "sendbuff", &device));
  if (device)
    return fromTern(
        ternSendOnStream(sendbuff, count, static_cast<ternDataType_t>(datatype), peer, toTern(comm), stream));
  return fromTern(ternSend(sendbuff, count, static_cast<ternDataType_t>(datatype), peer, toTern(comm)));
}

NCCL_SHIM_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                    cudaStream_t stream) {
  const char* fn = "ncclRecv";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  SHIM_CHECK(checkBuffer(recvbuff, count, typeSize(datatype), fn, "recvbuff", &device));
  if (device)
    return fromTern(
        ternRecvOnStream(recvbuff, count, static_cast<ternDataType_t>(datatype), peer, toTern(comm), stream));
  return fromTern(ternRecv(recvbuff, count, static_cast<ternDataType_t>(datatype), peer, toTern(comm)));
}

// Gather and Scatter are point-to-point groups: root receives (sends) one block per rank, its own block included
// as a send to itself, which tern turns into a local copy in issue order. In place, root's own block stays.
NCCL_SHIM_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      int root, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclGather";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  if (root < 0 || root >= size) return fail(ncclInvalidArgument, "%s: root %d out of range [0, %d)", fn, root, size);
  if (count > SIZE_MAX / static_cast<size_t>(size) / typeSize(datatype)) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of recvbuff", fn, count);
  }
  const size_t block = count * typeSize(datatype);
  SHIM_CHECK(checkBuffer(sendbuff, count, typeSize(datatype), fn, "sendbuff", &device));
  if (rank == root) SHIM_CHECK(checkBuffer(recvbuff, count * size, typeSize(datatype), fn, "recvbuff", &device));
  const ternDataType_t t = static_cast<ternDataType_t>(datatype);
  const ternComm_t c = toTern(comm);
  // Device buffers: the same group of stream-ordered sends and receives, enqueued on the stream at the group's end.
  auto send = [&](const void* b, int peer) {
    return device ? ternSendOnStream(b, count, t, peer, c, stream) : ternSend(b, count, t, peer, c);
  };
  auto recv = [&](void* b, int peer) {
    return device ? ternRecvOnStream(b, count, t, peer, c, stream) : ternRecv(b, count, t, peer, c);
  };
  if (ternGroupStart() != ternSuccess) return fromTern(ternInternalError);
  ternResult_t r = ternSuccess;
  if (rank == root) {
    char* out = static_cast<char*>(recvbuff);
    const bool inPlace = sendbuff == out + static_cast<size_t>(root) * block;
    for (int p = 0; p < size && r == ternSuccess; ++p) {
      if (p == root && inPlace) continue;
      if (p == root) r = send(sendbuff, root);
      if (r == ternSuccess) r = recv(out + static_cast<size_t>(p) * block, p);
    }
  } else {
    r = send(sendbuff, root);
  }
  ternResult_t end = ternGroupEnd();
  return fromTern(r != ternSuccess ? r : end);
}

NCCL_SHIM_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclScatter";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  bool device = false;
  if (root < 0 || root >= size) return fail(ncclInvalidArgument, "%s: root %d out of range [0, %d)", fn, root, size);
  if (count > SIZE_MAX / static_cast<size_t>(size) / typeSize(datatype)) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of sendbuff", fn, count);
  }
  const size_t block = count * typeSize(datatype);
  if (rank == root) SHIM_CHECK(checkBuffer(sendbuff, count * size, typeSize(datatype), fn, "sendbuff", &device));
  SHIM_CHECK(checkBuffer(recvbuff, count, typeSize(datatype), fn, "recvbuff", &device));
  const ternDataType_t t = static_cast<ternDataType_t>(datatype);
  const ternComm_t c = toTern(comm);
  // Device buffers: the same group of stream-ordered sends and receives, enqueued on the stream at the group's end.
  auto send = [&](const void* b, int peer) {
    return device ? ternSendOnStream(b, count, t, peer, c, stream) : ternSend(b, count, t, peer, c);
  };
  auto recv = [&](void* b, int peer) {
    return device ? ternRecvOnStream(b, count, t, peer, c, stream) : ternRecv(b, count, t, peer, c);
  };
  if (ternGroupStart() != ternSuccess) return fromTern(ternInternalError);
  ternResult_t r = ternSuccess;
  if (rank == root) {
    const char* in = static_cast<const char*>(sendbuff);
    const bool inPlace = recvbuff == in + static_cast<size_t>(root) * block;
    for (int p = 0; p < size && r == ternSuccess; ++p) {
      if (p == root && inPlace) continue;
      r = send(in + static_cast<size_t>(p) * block, p);
      if (r == ternSuccess && p == root) r = recv(recvbuff, root);
    }
  } else {
    r = recv(recvbuff, root);
  }
  ternResult_t end = ternGroupEnd();
  return fromTern(r != ternSuccess ? r : end);
}
