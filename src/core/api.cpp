// The C API boundary: validates arguments and handles, converts exceptions into ternResult_t plus a message for
// ternGetLastError, and hands each call to the core as an Operation. What calls do (protocols, state, formats) is
// the core's: Communicator (communicator*.cpp), Compressor (its checkpoint), call groups, conversions.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "core/algo_choice.hpp"
#include "core/call_group.hpp"
#include "core/communicator.hpp"
#include "core/compressor.hpp"
#include "core/device_compressed_calls.hpp"
#include "core/device_streams.hpp"
#include "core/float_convert.hpp"
#include "core/nccl_device_engine.hpp"
#include "core/operation_pool.hpp"
#include "core/staged_device_calls.hpp"
#include "exec/collective.hpp"
#include "tern/tern.h"
#include "tern/tern_cuda.h"
#include "tern/tern_ext.h"
#include "transport/shm/intra_node_setup.hpp"

#define TERN_API extern "C" __attribute__((visibility("default")))

// The handle the user holds. A call takes a reference to the communicator (acquireComm) and works on that, so an
// abort or destroy from another thread drops only the handle's reference: the communicator is freed when the last
// call leaves. A destroyed handle stays readable for a while (retireComm's quarantine), so that using it is
// reported as an invalid argument instead of reading freed memory.
struct ternComm {
  static constexpr uint64_t kLive = 0x7465726e636f6d6dull;       // "terncomm"
  static constexpr uint64_t kDestroyed = 0x646561642d636f6dull;  // "dead-com"
  std::atomic<uint64_t> magic{kLive};
  int nranks = 0;                            // impl's size, fixed for its life: checked without taking a reference
  std::mutex mutex;                          // guards impl against a concurrent destroy
  std::shared_ptr<tern::Communicator> impl;  // null once destroyed
};

struct ternCompressor {
  std::unique_ptr<tern::Compressor> impl;
};

struct ternRequest {
  std::shared_ptr<tern::Operation> op;
  ternComm_t comm;
};

namespace tern {
namespace {

thread_local std::string lastErrorMessage;

ternResult_t record(ternResult_t code, const std::string& message) {
  lastErrorMessage = message;
  if (code != ternSuccess && code != ternInProgress) TERN_LOG(kInfo, kColl, -1, "call failed: %s", message.c_str());
  return code;
}

// Runs body, translating exceptions; every API function goes through here.
template <typename F>
ternResult_t guarded(F&& body) {
  try {
    return body();
  } catch (const Error& e) {
    return record(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return record(ternSystemError, "out of memory");
  } catch (const std::exception& e) {
    return record(ternInternalError, e.what());
  }
}

using CommRef = std::shared_ptr<Communicator>;

// The communicator behind comm, with a reference held for the call; NULL, destroyed or foreign handles are invalid
// arguments.
// checkLive: the handle's checks alone, for calls that only record work in a group (ternGroupEnd takes the reference).
void checkLive(ternComm_t comm, const char* fn) {
  if (comm == nullptr) throwError(ternInvalidArgument, "%s: comm is NULL", fn);
  if (comm->magic.load(std::memory_order_acquire) != ternComm::kLive) {
    throwError(ternInvalidArgument,
               "%s: comm %p was destroyed (ternCommDestroy/ternCommAbort) or is not a communicator", fn,
               static_cast<void*>(comm));
  }
}

CommRef acquireComm(ternComm_t comm, const char* fn) {
  checkLive(comm, fn);
  std::lock_guard<std::mutex> lock(comm->mutex);
  if (!comm->impl) throwError(ternInvalidArgument, "%s: comm %p was destroyed", fn, static_cast<void*>(comm));
  return comm->impl;
}

// Destroyed handles kept (and still marked destroyed) before their memory is reused: enough for a program's
// late calls on recently destroyed communicators to be caught, bounded for programs that make many.
constexpr size_t kRetiredHandles = 4096;

// Marks comm destroyed and takes its reference; only the first of concurrent destroys gets it (null otherwise).
CommRef retireComm(ternComm_t comm, const char* fn) {
  uint64_t live = ternComm::kLive;
  if (!comm->magic.compare_exchange_strong(live, ternComm::kDestroyed, std::memory_order_acq_rel)) {
    throwError(ternInvalidArgument, "%s: comm %p was already destroyed or is not a communicator", fn,
               static_cast<void*>(comm));
  }
  CommRef impl;
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    impl = std::move(comm->impl);
  }
  static std::mutex retiredMutex;
  static auto* retired = new std::deque<ternComm*>();  // never freed: reachable, so not reported as a leak
  ternComm* oldest = nullptr;
  {
    std::lock_guard<std::mutex> lock(retiredMutex);
    retired->push_back(comm);
    if (retired->size() > kRetiredHandles) {
      oldest = retired->front();
      retired->pop_front();
    }
  }
  delete oldest;
  return impl;
}

void checkBuffer(const void* p, size_t count, const char* fn, const char* name) {
  if (p == nullptr && count > 0) throwError(ternInvalidArgument, "%s: %s is NULL with count %zu", fn, name, count);
}

size_t checkedBytes(size_t count, size_t multiplier, ternDataType_t dt, const char* fn) {
  if (!validDataType(dt)) throwError(ternInvalidArgument, "%s: invalid datatype %d", fn, static_cast<int>(dt));
  const size_t e = dataTypeSize(dt);
  // Overflow checks without divisions: alltoallv checks 2n counts on every call.
  size_t bytes = 0, total = 0;
  if (__builtin_mul_overflow(count, e, &bytes) ||
      (multiplier != 0 && __builtin_mul_overflow(bytes, multiplier, &total)) ||
      bytes > (std::numeric_limits<size_t>::max() >> 2)) {
    throwError(ternInvalidArgument, "%s: count %zu overflows the size of the buffer", fn, count);
  }
  return bytes;
}

void checkOp(ternRedOp_t op, const char* fn) {
  if (!validRedOp(op)) throwError(ternInvalidArgument, "%s: invalid reduction op %d", fn, static_cast<int>(op));
}

void checkRank(int r, int n, const char* fn, const char* what) {
  if (r < 0 || r >= n) throwError(ternInvalidArgument, "%s: %s %d out of range [0, %d)", fn, what, r, n);
}

// How a call runs: blocking (no request), asynchronous (a request to wait on), or ordered on a CUDA stream
// (tern_cuda.h). Converts from the request pointer the host API functions pass.
struct Launch {
  Launch(ternRequest_t* r = nullptr) : request(r) {}  // NOLINT(google-explicit-constructor): the common case
  static Launch onStream(void* s) {
    Launch l;
    l.streamOrdered = true;
    l.stream = s;
    return l;
  }
  ternRequest_t* request = nullptr;
  bool streamOrdered = false;
  void* stream = nullptr;
};

// NCCL takes device memory only: a host buffer on one rank would leave the others waiting inside NCCL.
void checkDeviceBuffers(DeviceStreams& streams, const Operation& op, Communicator& c, const char* what) {
  auto check = [&](const void* p, const char* name) {
    if (p != nullptr && !streams.isDeviceMemory(p)) {
      throwError(ternInvalidUsage,
                 "rank %d: stream-ordered %s: %s %p is not device memory, and NCCL runs this communicator's "
                 "stream-ordered calls (TERN_DEVICE_ENGINE=staged takes host buffers too)",
                 c.rank(), what, name, p);
    }
  };
  const bool sized = inputBytes(op.args, c.size()) > 0 || outputBytes(op.args, c.size()) > 0;
  if (sized) {
    if (!(op.args.coll == Collective::kBroadcast && c.rank() != op.args.root)) check(op.input, "sendbuff");
    check(op.output, "recvbuff");
  }
  for (const UserTransfer& t : op.transfers) {
    if (t.bytes > 0) check(t.data, t.isSend ? "sendbuff" : "recvbuff");
  }
}

// Stages op's device buffers and enqueues it on the stream (core/staged_device_calls.hpp), hands it to NCCL, or
// compresses it with the codecs on the device (TERN_COMPRESS on an allreduce): as the ranks agreed for its shape
// (Communicator::devicePlan).
ternResult_t launchOnStream(Communicator& c, const std::shared_ptr<Operation>& op, void* stream) {
  const char* what = collectiveName(op->args.coll);
  std::string why;
  DeviceStreams* streams = deviceStreams(&why);
  if (streams == nullptr) {
    throwError(ternInvalidUsage, "stream-ordered %s (device buffers on a CUDA stream) needs the CUDA driver: %s", what,
               why.c_str());
  }
  c.enterCall();
  struct Exit {
    Communicator& c;
    ~Exit() { c.exitCall(); }
  } exitGuard{c};
  NcclDeviceEngine* nccl = c.ncclEngine(*streams);  // also carries compressed calls' payloads where it is up
  const bool compressible =
      op->implicitCompression && op->args.coll == Collective::kAllReduce && c.deviceCodecsEverywhere();
  compress::DeviceCodecs* codecs = compressible ? streams->codecsFor(stream) : nullptr;
  const bool onDevice = codecs != nullptr && streams->isDeviceMemory(op->output) && streams->isDeviceMemory(op->input);
  const Communicator::DevicePlan plan =
      c.devicePlan(op->args, compressible, onDevice, nccl != nullptr && NcclDeviceEngine::runs(*op));
  if (plan.compress) {
    Compressor* compressor = c.deviceCompressor(op->args, op->output, onDevice);
    const char* algorithm = c.deviceCompressedCalls(*streams, *codecs)
                                .allReduce(c, c.stagedDeviceCalls(*streams), nccl, *op, *compressor,
                                           plan.hierarchical ? &c.hostOf() : nullptr, stream);
    c.noteAlgorithm(std::string(algorithm) + " (" + compressor->codec->spec() + ", " + codecs->name() + ")");
    return ternSuccess;
  }
  if (plan.nccl) {
    checkDeviceBuffers(*streams, *op, c, what);
    nccl->launch(*op, stream);
    c.noteAlgorithm("nccl");
    return ternSuccess;
  }
  c.stagedDeviceCalls(*streams).launch(c, op, stream);
  return ternSuccess;
}

// Submits op now (or records it in the open group); with a request it is asynchronous, on a stream
// stream-ordered. c is comm's communicator, held by the caller.
ternResult_t launch(ternComm_t comm, Communicator& c, std::shared_ptr<Operation> op, const Launch& how) {
  if (how.streamOrdered) {
    if (groupOpen()) {
      recordInGroup(comm, std::move(op), true, how.stream);
      return ternSuccess;
    }
    return launchOnStream(c, op, how.stream);
  }
  ternRequest_t* request = how.request;
  if (groupOpen()) {
    if (request != nullptr) *request = nullptr;
    recordInGroup(comm, std::move(op));
    return ternSuccess;
  }
  if (request != nullptr) {
    c.enterCall();
    struct Exit {
      Communicator& c;
      ~Exit() { c.exitCall(); }
    } exitGuard{c};
    c.submit(op, false);
    *request = new ternRequest{op, comm};
    return ternSuccess;
  }
  c.runBlocking(op);
  return ternSuccess;
}

ternResult_t allReduce(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op, ternComm_t comm,
                       Launch how) {
  return guarded([&] {
    const char* fn = "ternAllReduce";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    checkedBytes(count, 1, dt, fn);
    checkOp(op, fn);
    checkBuffer(s, count, fn, "sendbuff");
    checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kAllReduce, s, r, count, dt, op, 0);
    o->args.inPlace = s == r;
    o->implicitCompression = c.mayCompressImplicitly(o->args);  // TERN_COMPRESS
    return launch(comm, *ref, o, how);
  });
}

Compressor& checkCompressor(ternCompressor_t c, const char* fn) {
  if (c == nullptr || !c->impl) throwError(ternInvalidArgument, "%s: compressor is NULL", fn);
  return *c->impl;
}

void checkCompressedOp(ternRedOp_t op, const char* fn) {
  if (op != ternSum && op != ternAvg) {
    throwError(ternInvalidArgument, "%s: compressed reductions support sum and avg, not %s", fn,
               validRedOp(op) ? redOpName(op) : "an invalid op");
  }
}

void checkCompressorFits(const Compressor& c, size_t elements, ternDataType_t dt, const char* fn) {
  if (c.count != elements || c.dtype != dt) {
    throwError(ternInvalidArgument, "%s: compressor was created for %zu %s elements, the call has %zu %s", fn, c.count,
               dataTypeName(c.dtype), elements, dataTypeName(dt));
  }
}

ternResult_t allReduceCompressed(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                 ternCompressor_t comp, ternComm_t comm, Launch how) {
  return guarded([&] {
    const char* fn = "ternAllReduceCompressed";
    const CommRef ref = acquireComm(comm, fn);
    checkedBytes(count, 1, dt, fn);
    checkCompressedOp(op, fn);
    Compressor& c = checkCompressor(comp, fn);
    checkCompressorFits(c, count, dt, fn);
    checkBuffer(s, count, fn, "sendbuff");
    checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kAllReduce, s, r, count, dt, op, 0);
    o->args.inPlace = s == r;
    o->compressor = &c;
    return launch(comm, *ref, o, how);
  });
}

ternResult_t allGatherCompressed(const void* s, void* r, size_t count, ternDataType_t dt, ternCompressor_t comp,
                                 ternComm_t comm, Launch how) {
  return guarded([&] {
    const char* fn = "ternAllGatherCompressed";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& cm = *ref;
    size_t bytes = checkedBytes(count, cm.size(), dt, fn);
    Compressor& c = checkCompressor(comp, fn);
    checkCompressorFits(c, count, dt, fn);
    checkBuffer(s, count, fn, "sendbuff");
    checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kAllGather, s, r, count, dt, ternSum, 0);
    o->args.inPlace = s == static_cast<const char*>(r) + bytes * cm.rank();
    o->compressor = &c;
    return launch(comm, *ref, o, how);
  });
}

ternResult_t reduceScatterCompressed(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                     ternCompressor_t comp, ternComm_t comm, Launch how) {
  return guarded([&] {
    const char* fn = "ternReduceScatterCompressed";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& cm = *ref;
    size_t bytes = checkedBytes(count, cm.size(), dt, fn);
    checkCompressedOp(op, fn);
    Compressor& c = checkCompressor(comp, fn);
    checkCompressorFits(c, count * cm.size(), dt, fn);
    checkBuffer(s, count, fn, "sendbuff");
    checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kReduceScatter, s, r, count, dt, op, 0);
    o->args.inPlace = static_cast<const char*>(s) + bytes * cm.rank() == r;
    o->compressor = &c;
    return launch(comm, *ref, o, how);
  });
}

ternResult_t allGather(const void* s, void* r, size_t count, ternDataType_t dt, ternComm_t comm, Launch how) {
  return guarded([&] {
    const char* fn = "ternAllGather";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    size_t bytes = checkedBytes(count, c.size(), dt, fn);
    checkBuffer(s, count, fn, "sendbuff");
    checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kAllGather, s, r, count, dt, ternSum, 0);
    o->args.inPlace = s == static_cast<const char*>(r) + bytes * c.rank();
    return launch(comm, *ref, o, how);
  });
}

ternResult_t reduceScatter(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op, ternComm_t comm,
                           Launch how) {
  return guarded([&] {
    const char* fn = "ternReduceScatter";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    size_t bytes = checkedBytes(count, c.size(), dt, fn);
    checkOp(op, fn);
    checkBuffer(s, count, fn, "sendbuff");
    checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kReduceScatter, s, r, count, dt, op, 0);
    o->args.inPlace = static_cast<const char*>(s) + bytes * c.rank() == r;
    return launch(comm, *ref, o, how);
  });
}

ternResult_t broadcast(const void* s, void* r, size_t count, ternDataType_t dt, int root, ternComm_t comm, Launch how) {
  return guarded([&] {
    const char* fn = "ternBroadcast";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    checkedBytes(count, 1, dt, fn);
    checkRank(root, c.size(), fn, "root");
    if (c.rank() == root) checkBuffer(s, count, fn, "sendbuff");
    checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kBroadcast, s, r, count, dt, ternSum, root);
    o->args.inPlace = s == r;
    return launch(comm, *ref, o, how);
  });
}

ternResult_t reduceRoot(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op, int root,
                        ternComm_t comm, Launch how) {
  return guarded([&] {
    const char* fn = "ternReduce";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    checkedBytes(count, 1, dt, fn);
    checkOp(op, fn);
    checkRank(root, c.size(), fn, "root");
    checkBuffer(s, count, fn, "sendbuff");
    if (c.rank() == root) checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kReduce, s, c.rank() == root ? r : nullptr, count, dt, op, root);
    o->args.inPlace = s == r && c.rank() == root;
    return launch(comm, *ref, o, how);
  });
}

ternResult_t alltoall(const void* s, void* r, size_t count, ternDataType_t dt, ternComm_t comm, Launch how) {
  return guarded([&] {
    const char* fn = "ternAlltoAll";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    checkedBytes(count, c.size(), dt, fn);
    checkBuffer(s, count, fn, "sendbuff");
    checkBuffer(r, count, fn, "recvbuff");
    auto o = newOperation(Collective::kAlltoAll, s, r, count, dt, ternSum, 0);
    o->args.inPlace = s == r;
    return launch(comm, *ref, o, how);
  });
}

ternResult_t alltoallv(const void* s, const size_t sc[], const size_t sd[], void* r, const size_t rc[],
                       const size_t rd[], ternDataType_t dt, ternComm_t comm, Launch how) {
  return guarded([&] {
    const char* fn = "ternAlltoAllv";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    checkedBytes(0, 1, dt, fn);
    if (sc == nullptr || sd == nullptr || rc == nullptr || rd == nullptr) {
      throwError(ternInvalidArgument, "%s: counts/displacements arrays must not be NULL", fn);
    }
    auto o = newOperation(Collective::kAlltoAllv, s, r, 0, dt, ternSum, 0);
    size_t n = static_cast<size_t>(c.size());
    o->args.sendCounts.assign(sc, sc + n);
    o->args.sendDispls.assign(sd, sd + n);
    o->args.recvCounts.assign(rc, rc + n);
    o->args.recvDispls.assign(rd, rd + n);
    size_t sendTotal = 0, recvTotal = 0;
    for (size_t i = 0; i < n; ++i) {
      checkedBytes(sc[i], 1, dt, fn);
      checkedBytes(rc[i], 1, dt, fn);
      checkedBytes(sd[i], 1, dt, fn);
      checkedBytes(rd[i], 1, dt, fn);
      sendTotal += sc[i];
      recvTotal += rc[i];
    }
    checkBuffer(s, sendTotal, fn, "sendbuff");
    checkBuffer(r, recvTotal, fn, "recvbuff");
    o->args.inPlace = s == r;
    return launch(comm, *ref, o, how);
  });
}

ternResult_t pointToPoint(bool isSend, const void* buf, size_t count, ternDataType_t dt, int peer, ternComm_t comm,
                          Launch how) {
  return guarded([&] {
    const char* fn = isSend ? "ternSend" : "ternRecv";
    // Inside a group the call is only recorded, and ternGroupEnd takes the communicator (and finds it destroyed, if
    // it was meanwhile): a live handle and its size are all there is to check, without a reference of its own.
    const bool grouped = groupOpen();
    CommRef ref;
    if (grouped) {
      checkLive(comm, fn);
    } else {
      ref = acquireComm(comm, fn);
    }
    size_t bytes = checkedBytes(count, 1, dt, fn);
    checkRank(peer, comm->nranks, fn, "peer");
    checkBuffer(buf, count, fn, isSend ? "sendbuff" : "recvbuff");
    const UserTransfer transfer{isSend, peer, const_cast<void*>(buf), bytes};
    // In a group, after another send or receive on this communicator: one more transfer of that batch.
    if (appendToGroupedBatch(comm, transfer, how.streamOrdered, how.stream)) {
      if (how.request != nullptr) *how.request = nullptr;
      return ternSuccess;
    }
    auto o = newOperation(Collective::kPointToPoint, nullptr, nullptr, count, dt, ternSum, 0);
    o->transfers.push_back(transfer);
    if (grouped) {
      if (how.request != nullptr) *how.request = nullptr;
      recordInGroup(comm, std::move(o), how.streamOrdered, how.stream);
      return ternSuccess;
    }
    return launch(comm, *ref, o, how);
  });
}

ternResult_t barrier(ternComm_t comm, Launch how) {
  return guarded([&] {
    const CommRef ref = acquireComm(comm, "ternBarrier");
    return launch(comm, *ref, newOperation(Collective::kBarrier, nullptr, nullptr, 0, ternUint8, ternSum, 0), how);
  });
}

// The handle for a communicator just made.
ternComm_t newHandle(std::unique_ptr<Communicator> made) {
  auto handle = std::make_unique<ternComm>();
  handle->nranks = made->size();
  handle->impl = Communicator::share(std::move(made));
  return handle.release();
}

ternResult_t initRank(ternComm_t* comm, int nranks, const ternUniqueId& commId, int rank, ternConfig_t* config) {
  return guarded([&] {
    if (comm == nullptr) throwError(ternInvalidArgument, "ternCommInitRank: comm is NULL");
    *comm = nullptr;
    if (nranks < 1) throwError(ternInvalidArgument, "ternCommInitRank: nranks %d < 1", nranks);
    checkRank(rank, nranks, "ternCommInitRank", "rank");
    UniqueIdData id = UniqueIdData::unpack(commId);
    CommOptions opts = resolveOptions(config);
    *comm = newHandle(Communicator::create(nranks, id, rank, opts));
    return ternSuccess;
  });
}

}  // namespace
}  // namespace tern

using namespace tern;

TERN_API ternResult_t ternGetVersion(int* version) {
  if (version == nullptr) return record(ternInvalidArgument, "ternGetVersion: version is NULL");
  *version = TERN_VERSION_CODE;
  return ternSuccess;
}

TERN_API const char* ternGetErrorString(ternResult_t r) {
  switch (r) {
    case ternSuccess:
      return "no error";
    case ternUnhandledCudaError:
      return "unhandled cuda error";
    case ternSystemError:
      return "unhandled system error";
    case ternInternalError:
      return "internal error";
    case ternInvalidArgument:
      return "invalid argument";
    case ternInvalidUsage:
      return "invalid usage";
    case ternRemoteError:
      return "remote process exited or there was a network error";
    case ternInProgress:
      return "operation in progress";
    case ternTimeout:
      return "operation timed out";
    default:
      return "unknown result code";
  }
}

TERN_API const char* ternGetLastError(ternComm_t comm) {
  if (lastErrorMessage.empty() && comm != nullptr) {
    static thread_local std::string commError;
    try {
      commError = acquireComm(comm, "ternGetLastError")->lastError();
    } catch (const Error& e) {
      commError = e.what();
    }
    return commError.c_str();
  }
  return lastErrorMessage.c_str();
}

TERN_API ternResult_t ternCommGetAsyncError(ternComm_t comm, ternResult_t* asyncError) {
  return guarded([&] {
    const CommRef ref = acquireComm(comm, "ternCommGetAsyncError");
    Communicator& c = *ref;
    if (asyncError == nullptr) throwError(ternInvalidArgument, "ternCommGetAsyncError: asyncError is NULL");
    *asyncError = c.asyncError();
    return ternSuccess;
  });
}

TERN_API ternResult_t ternGetUniqueId(ternUniqueId* uniqueId) {
  return guarded([&] {
    if (uniqueId == nullptr) throwError(ternInvalidArgument, "ternGetUniqueId: uniqueId is NULL");
    requireValidKnobs("ternGetUniqueId");  // the root it may start waits TERN_TIMEOUT
    *uniqueId = Communicator::newUniqueId(knobs().transport == "inproc").pack();
    return ternSuccess;
  });
}

// The numeric TERN_* knobs, for libtern_train (which reads no variable itself) and tools (include/tern/tern_ext.h).
TERN_API ternResult_t ternGetKnobNumber(const char* name, double fallback, double* value) {
  return guarded([&] {
    if (name == nullptr || value == nullptr)
      throwError(ternInvalidArgument, "ternGetKnobNumber: name or value is NULL");
    if (std::strncmp(name, "TERN_", 5) != 0 || findKnob(name + 5) == nullptr) {
      throwError(ternInvalidArgument, "ternGetKnobNumber: %s is not a knob of the table (src/base/env.cpp)", name);
    }
    const KnobSpec& k = *findKnob(name + 5);
    if (k.kind == KnobKind::kDecimal) {
      *value = envDecimal(k.name, fallback);
    } else if (k.kind == KnobKind::kInt || k.kind == KnobKind::kBytes) {
      *value = static_cast<double>(envInt(k.name, static_cast<long>(fallback)));
    } else {
      throwError(ternInvalidArgument, "ternGetKnobNumber: %s is not a numeric knob", name);
    }
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCommInitRank(ternComm_t* comm, int nranks, ternUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr);
}

TERN_API ternResult_t ternCommInitRankConfig(ternComm_t* comm, int nranks, ternUniqueId commId, int rank,
                                             ternConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config);
}

TERN_API ternResult_t ternCommInitFromEnv(ternComm_t* comm, ternConfig_t* config) {
  return guarded([&] {
    if (comm == nullptr) throwError(ternInvalidArgument, "ternCommInitFromEnv: comm is NULL");
    *comm = nullptr;
    requireValidKnobs("ternCommInitFromEnv");
    *comm = newHandle(Communicator::createFromEnvironment(config));
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCommSplit(ternComm_t comm, int color, int key, ternComm_t* newcomm, ternConfig_t* config) {
  return guarded([&]() -> ternResult_t {
    const char* fn = "ternCommSplit";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    if (newcomm == nullptr) throwError(ternInvalidArgument, "%s: newcomm is NULL", fn);
    *newcomm = nullptr;
    std::unique_ptr<Communicator> child = c.split(color, key, config);
    if (child) *newcomm = newHandle(std::move(child));
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCommDestroy(ternComm_t comm) {
  return guarded([&] {
    if (comm == nullptr) return ternSuccess;
    // Calls still inside on other threads keep the communicator until they leave; the last reference frees it.
    CommRef impl = retireComm(comm, "ternCommDestroy");
    impl.reset();
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCommAbort(ternComm_t comm) {
  return guarded([&] {
    if (comm == nullptr) return ternSuccess;
    CommRef impl = acquireComm(comm, "ternCommAbort");
    impl->abort(format("ternCommAbort called on rank %d", impl->rank()));
    CommRef handleReference = retireComm(comm, "ternCommAbort");  // dropped with impl: the last one frees
    return ternSuccess;
  });
}

TERN_API ternResult_t ternMemAlloc(void** ptr, size_t size) {
  return guarded([&] {
    if (ptr == nullptr) throwError(ternInvalidArgument, "ternMemAlloc: ptr is NULL");
    *ptr = nullptr;
    if (size == 0) return ternSuccess;
    *ptr = shmAlloc(size);
    if (*ptr == nullptr) throwError(ternSystemError, "ternMemAlloc: cannot allocate %zu bytes", size);
    return ternSuccess;
  });
}

TERN_API ternResult_t ternMemFree(void* ptr) {
  return guarded([&] {
    if (ptr != nullptr) shmFree(ptr);
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCommCount(const ternComm_t comm, int* count) {
  return guarded([&] {
    const CommRef ref = acquireComm(comm, "ternCommCount");
    Communicator& c = *ref;
    if (count == nullptr) throwError(ternInvalidArgument, "ternCommCount: count is NULL");
    *count = c.size();
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCommUserRank(const ternComm_t comm, int* rank) {
  return guarded([&] {
    const CommRef ref = acquireComm(comm, "ternCommUserRank");
    Communicator& c = *ref;
    if (rank == nullptr) throwError(ternInvalidArgument, "ternCommUserRank: rank is NULL");
    *rank = c.rank();
    return ternSuccess;
  });
}

TERN_API ternResult_t ternAllReduce(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                    ternComm_t comm) {
  return allReduce(s, r, count, dt, op, comm, nullptr);
}
TERN_API ternResult_t ternAllGather(const void* s, void* r, size_t count, ternDataType_t dt, ternComm_t comm) {
  return allGather(s, r, count, dt, comm, nullptr);
}
TERN_API ternResult_t ternReduceScatter(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                        ternComm_t comm) {
  return reduceScatter(s, r, count, dt, op, comm, nullptr);
}
TERN_API ternResult_t ternBroadcast(const void* s, void* r, size_t count, ternDataType_t dt, int root,
                                    ternComm_t comm) {
  return broadcast(s, r, count, dt, root, comm, nullptr);
}
TERN_API ternResult_t ternReduce(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op, int root,
                                 ternComm_t comm) {
  return reduceRoot(s, r, count, dt, op, root, comm, nullptr);
}
TERN_API ternResult_t ternAlltoAll(const void* s, void* r, size_t count, ternDataType_t dt, ternComm_t comm) {
  return alltoall(s, r, count, dt, comm, nullptr);
}
TERN_API ternResult_t ternAlltoAllv(const void* s, const size_t sc[], const size_t sd[], void* r, const size_t rc[],
                                    const size_t rd[], ternDataType_t dt, ternComm_t comm) {
  return alltoallv(s, sc, sd, r, rc, rd, dt, comm, nullptr);
}
TERN_API ternResult_t ternSend(const void* s, size_t count, ternDataType_t dt, int peer, ternComm_t comm) {
  return pointToPoint(true, s, count, dt, peer, comm, nullptr);
}
TERN_API ternResult_t ternRecv(void* r, size_t count, ternDataType_t dt, int peer, ternComm_t comm) {
  return pointToPoint(false, r, count, dt, peer, comm, nullptr);
}
TERN_API ternResult_t ternBarrier(ternComm_t comm) { return barrier(comm, nullptr); }

// The stream-ordered calls of tern_cuda.h (whose cudaStream_t is CUDA's `struct CUstream_st*`).
using ternStream = cudaStream_t;

TERN_API ternResult_t ternAllReduceOnStream(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                            ternComm_t comm, ternStream stream) {
  return allReduce(s, r, count, dt, op, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternAllGatherOnStream(const void* s, void* r, size_t count, ternDataType_t dt, ternComm_t comm,
                                            ternStream stream) {
  return allGather(s, r, count, dt, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternReduceScatterOnStream(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                                ternComm_t comm, ternStream stream) {
  return reduceScatter(s, r, count, dt, op, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternBroadcastOnStream(const void* s, void* r, size_t count, ternDataType_t dt, int root,
                                            ternComm_t comm, ternStream stream) {
  return broadcast(s, r, count, dt, root, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternReduceOnStream(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                         int root, ternComm_t comm, ternStream stream) {
  return reduceRoot(s, r, count, dt, op, root, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternAlltoAllOnStream(const void* s, void* r, size_t count, ternDataType_t dt, ternComm_t comm,
                                           ternStream stream) {
  return alltoall(s, r, count, dt, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternAlltoAllvOnStream(const void* s, const size_t sc[], const size_t sd[], void* r,
                                            const size_t rc[], const size_t rd[], ternDataType_t dt, ternComm_t comm,
                                            ternStream stream) {
  return alltoallv(s, sc, sd, r, rc, rd, dt, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternSendOnStream(const void* s, size_t count, ternDataType_t dt, int peer, ternComm_t comm,
                                       ternStream stream) {
  return pointToPoint(true, s, count, dt, peer, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternRecvOnStream(void* r, size_t count, ternDataType_t dt, int peer, ternComm_t comm,
                                       ternStream stream) {
  return pointToPoint(false, r, count, dt, peer, comm, Launch::onStream(stream));
}
TERN_API ternResult_t ternBarrierOnStream(ternComm_t comm, ternStream stream) {
  return barrier(comm, Launch::onStream(stream));
}

TERN_API ternResult_t ternAllReduceAsync(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                         ternComm_t comm, ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternAllReduceAsync: request is NULL");
  return allReduce(s, r, count, dt, op, comm, req);
}
TERN_API ternResult_t ternAllGatherAsync(const void* s, void* r, size_t count, ternDataType_t dt, ternComm_t comm,
                                         ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternAllGatherAsync: request is NULL");
  return allGather(s, r, count, dt, comm, req);
}
TERN_API ternResult_t ternReduceScatterAsync(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                             ternComm_t comm, ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternReduceScatterAsync: request is NULL");
  return reduceScatter(s, r, count, dt, op, comm, req);
}
TERN_API ternResult_t ternBroadcastAsync(const void* s, void* r, size_t count, ternDataType_t dt, int root,
                                         ternComm_t comm, ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternBroadcastAsync: request is NULL");
  return broadcast(s, r, count, dt, root, comm, req);
}
TERN_API ternResult_t ternReduceAsync(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op, int root,
                                      ternComm_t comm, ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternReduceAsync: request is NULL");
  return reduceRoot(s, r, count, dt, op, root, comm, req);
}
TERN_API ternResult_t ternAlltoAllAsync(const void* s, void* r, size_t count, ternDataType_t dt, ternComm_t comm,
                                        ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternAlltoAllAsync: request is NULL");
  return alltoall(s, r, count, dt, comm, req);
}
TERN_API ternResult_t ternAlltoAllvAsync(const void* s, const size_t sc[], const size_t sd[], void* r,
                                         const size_t rc[], const size_t rd[], ternDataType_t dt, ternComm_t comm,
                                         ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternAlltoAllvAsync: request is NULL");
  return alltoallv(s, sc, sd, r, rc, rd, dt, comm, req);
}
TERN_API ternResult_t ternSendAsync(const void* s, size_t count, ternDataType_t dt, int peer, ternComm_t comm,
                                    ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternSendAsync: request is NULL");
  return pointToPoint(true, s, count, dt, peer, comm, req);
}
TERN_API ternResult_t ternRecvAsync(void* r, size_t count, ternDataType_t dt, int peer, ternComm_t comm,
                                    ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternRecvAsync: request is NULL");
  return pointToPoint(false, r, count, dt, peer, comm, req);
}
TERN_API ternResult_t ternBarrierAsync(ternComm_t comm, ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternBarrierAsync: request is NULL");
  return barrier(comm, req);
}

TERN_API ternResult_t ternWait(ternRequest_t request) {
  if (request == nullptr) return record(ternInvalidArgument, "ternWait: request is NULL");
  std::unique_ptr<ternRequest> owned(request);
  owned->op->waitDone();
  if (owned->op->result != ternSuccess) return record(owned->op->result, owned->op->error);
  return ternSuccess;
}

TERN_API ternResult_t ternTest(ternRequest_t request, int* done) {
  if (request == nullptr || done == nullptr) return record(ternInvalidArgument, "ternTest: request or done is NULL");
  if (!request->op->isDone()) {
    *done = 0;
    return ternSuccess;
  }
  *done = 1;
  return ternWait(request);
}

TERN_API ternResult_t ternGroupStart(void) {
  openGroup();
  return ternSuccess;
}

TERN_API ternResult_t ternGroupEnd(void) {
  // The thread's list of grouped calls, handed back to the next group cleared (closeGroup swaps) so that neither
  // allocates; released at the end so that the calls' operations can be recycled.
  thread_local std::vector<GroupedCall> grouped;
  struct Release {
    std::vector<GroupedCall>& calls;
    ~Release() { calls.clear(); }
  } release{grouped};
  std::vector<GroupedCall>& ops = grouped;
  if (!closeGroup(&ops)) return record(ternInvalidUsage, "ternGroupEnd without ternGroupStart");
  if (ops.empty()) return ternSuccess;
  auto handleOf = [](const GroupedCall& call) { return static_cast<ternComm_t>(const_cast<void*>(call.handle)); };
  if (ops.size() == 1) {
    const Launch how = ops[0].streamOrdered ? Launch::onStream(ops[0].stream) : Launch(nullptr);
    return guarded(
        [&] { return launch(handleOf(ops[0]), *acquireComm(handleOf(ops[0]), "ternGroupEnd"), ops[0].op, how); });
  }
  // Several calls (e.g. one thread driving several ranks): start all, then wait for all, so that they can depend on
  // each other. Stream-ordered calls are enqueued on their streams, which order them from there.
  std::vector<ternRequest_t> requests(ops.size(), nullptr);
  ternResult_t first = ternSuccess;
  for (size_t i = 0; i < ops.size(); ++i) {
    ternResult_t r = guarded([&] {
      const Launch how = ops[i].streamOrdered ? Launch::onStream(ops[i].stream) : Launch(&requests[i]);
      return launch(handleOf(ops[i]), *acquireComm(handleOf(ops[i]), "ternGroupEnd"), ops[i].op, how);
    });
    if (r != ternSuccess && first == ternSuccess) first = r;
  }
  for (ternRequest_t req : requests) {
    if (req == nullptr) continue;
    ternResult_t r = ternWait(req);
    if (r != ternSuccess && first == ternSuccess) first = r;
  }
  return first;
}

TERN_API ternResult_t ternQueryAlgorithm(ternComm_t comm, const char* collective, size_t count, ternDataType_t dt,
                                         char* name, size_t nameLen, double* predictedUs) {
  return guarded([&] {
    const CommRef ref = acquireComm(comm, "ternQueryAlgorithm");
    Communicator& c = *ref;
    if (collective == nullptr) throwError(ternInvalidArgument, "ternQueryAlgorithm: collective is NULL");
    bool ok = false;
    CollArgs args;
    args.coll = parseCollectiveName(collective, &ok);
    if (!ok) throwError(ternInvalidArgument, "ternQueryAlgorithm: unknown collective '%s'", collective);
    checkedBytes(count, c.size(), dt, "ternQueryAlgorithm");
    args.count = count;
    args.dtype = dt;
    const Choice choice = c.choose(args);
    if (name != nullptr && nameLen > 0) {
      std::snprintf(name, nameLen, "%s", choice.name.c_str());
    }
    if (predictedUs != nullptr) *predictedUs = c.predictSeconds(args, choice) * 1e6;
    return ternSuccess;
  });
}

TERN_API ternResult_t ternQueryCompressedAlgorithm(ternComm_t comm, const char* collective, size_t count,
                                                   ternDataType_t dt, const char* codec, char* name, size_t nameLen,
                                                   double* predictedUs) {
  return guarded([&] {
    const char* fn = "ternQueryCompressedAlgorithm";
    const CommRef ref = acquireComm(comm, fn);
    Communicator& c = *ref;
    if (collective == nullptr) throwError(ternInvalidArgument, "%s: collective is NULL", fn);
    if (codec == nullptr) throwError(ternInvalidArgument, "%s: codec is NULL", fn);
    bool ok = false;
    CollArgs args;
    args.coll = parseCollectiveName(collective, &ok);
    if (!ok) throwError(ternInvalidArgument, "%s: unknown collective '%s'", fn, collective);
    checkedBytes(count, c.size(), dt, fn);
    args.count = count;
    args.dtype = dt;
    double seconds = 0;
    const std::string algo = c.compressedAlgorithmFor(args, codec, &seconds);
    if (name != nullptr && nameLen > 0) std::snprintf(name, nameLen, "%s", algo.c_str());
    if (predictedUs != nullptr) *predictedUs = seconds * 1e6;
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCommLastAlgorithm(ternComm_t comm, char* name, size_t nameLen) {
  return guarded([&] {
    const CommRef ref = acquireComm(comm, "ternCommLastAlgorithm");
    if (name == nullptr || nameLen == 0)
      throwError(ternInvalidArgument, "ternCommLastAlgorithm: name is NULL or empty");
    std::snprintf(name, nameLen, "%s", ref->lastAlgorithm().c_str());
    return ternSuccess;
  });
}

TERN_API ternResult_t ternConvert(const void* src, ternDataType_t srcType, void* dst, ternDataType_t dstType,
                                  size_t count) {
  return guarded([&] {
    const char* fn = "ternConvert";
    if (!isFloatType(srcType) || !isFloatType(dstType)) {
      throwError(ternInvalidArgument, "%s: only float16, bfloat16, float32 and float64 convert (got %d -> %d)", fn,
                 static_cast<int>(srcType), static_cast<int>(dstType));
    }
    checkBuffer(src, count, fn, "src");
    checkBuffer(dst, count, fn, "dst");
    convertFloats(src, srcType, dst, dstType, count);
    return ternSuccess;
  });
}

TERN_API const char* ternCommTransportName(ternComm_t comm) {
  try {
    return acquireComm(comm, "ternCommTransportName")->transportName();  // a name with static storage
  } catch (const Error&) {
    return "";
  }
}

TERN_API ternResult_t ternCommHostCount(ternComm_t comm, int* hosts) {
  return guarded([&] {
    const CommRef ref = acquireComm(comm, "ternCommHostCount");
    if (hosts == nullptr) throwError(ternInvalidArgument, "ternCommHostCount: hosts is NULL");
    const std::vector<std::string>& ids = ref->hostIds();
    *hosts = static_cast<int>(std::set<std::string>(ids.begin(), ids.end()).size());
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCompressorCreate(const char* method, const char* params, size_t count, ternDataType_t dt,
                                           ternCompressor_t* compressor) {
  return guarded([&] {
    if (compressor == nullptr) throwError(ternInvalidArgument, "ternCompressorCreate: compressor is NULL");
    *compressor = nullptr;
    if (method == nullptr) throwError(ternInvalidArgument, "ternCompressorCreate: method is NULL");
    checkedBytes(count, 1, dt, "ternCompressorCreate");
    auto impl = Compressor::create(method, params, count, dt);
    *compressor = new ternCompressor{std::move(impl)};
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCompressorDestroy(ternCompressor_t compressor) {
  delete compressor;
  return ternSuccess;
}

TERN_API ternResult_t ternCompressorReset(ternCompressor_t compressor) {
  return guarded([&] {
    checkCompressor(compressor, "ternCompressorReset").reset();
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCompressorSetSeed(ternCompressor_t compressor, uint64_t seed) {
  return guarded([&] {
    checkCompressor(compressor, "ternCompressorSetSeed").seed = seed;
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCompressorSave(ternCompressor_t compressor, void* buffer, size_t* bytes) {
  return guarded([&] {
    Compressor& c = checkCompressor(compressor, "ternCompressorSave");
    if (bytes == nullptr) throwError(ternInvalidArgument, "ternCompressorSave: bytes is NULL");
    if (buffer == nullptr) {
      *bytes = c.checkpointBytes();
      return ternSuccess;
    }
    *bytes = c.saveCheckpoint(buffer, *bytes);
    return ternSuccess;
  });
}

TERN_API ternResult_t ternCompressorLoad(ternCompressor_t compressor, const void* buffer, size_t bytes) {
  return guarded([&] {
    checkCompressor(compressor, "ternCompressorLoad").loadCheckpoint(buffer, bytes);
    return ternSuccess;
  });
}

TERN_API ternResult_t ternAllReduceCompressed(const void* s, void* r, size_t count, ternDataType_t dt, ternRedOp_t op,
                                              ternCompressor_t c, ternComm_t comm) {
  return allReduceCompressed(s, r, count, dt, op, c, comm, nullptr);
}
TERN_API ternResult_t ternAllGatherCompressed(const void* s, void* r, size_t count, ternDataType_t dt,
                                              ternCompressor_t c, ternComm_t comm) {
  return allGatherCompressed(s, r, count, dt, c, comm, nullptr);
}
TERN_API ternResult_t ternReduceScatterCompressed(const void* s, void* r, size_t count, ternDataType_t dt,
                                                  ternRedOp_t op, ternCompressor_t c, ternComm_t comm) {
  return reduceScatterCompressed(s, r, count, dt, op, c, comm, nullptr);
}
TERN_API ternResult_t ternAllReduceCompressedAsync(const void* s, void* r, size_t count, ternDataType_t dt,
                                                   ternRedOp_t op, ternCompressor_t c, ternComm_t comm,
                                                   ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternAllReduceCompressedAsync: request is NULL");
  return allReduceCompressed(s, r, count, dt, op, c, comm, req);
}
TERN_API ternResult_t ternAllGatherCompressedAsync(const void* s, void* r, size_t count, ternDataType_t dt,
                                                   ternCompressor_t c, ternComm_t comm, ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternAllGatherCompressedAsync: request is NULL");
  return allGatherCompressed(s, r, count, dt, c, comm, req);
}
TERN_API ternResult_t ternReduceScatterCompressedAsync(const void* s, void* r, size_t count, ternDataType_t dt,
                                                       ternRedOp_t op, ternCompressor_t c, ternComm_t comm,
                                                       ternRequest_t* req) {
  if (req == nullptr) return record(ternInvalidArgument, "ternReduceScatterCompressedAsync: request is NULL");
  return reduceScatterCompressed(s, r, count, dt, op, c, comm, req);
}
