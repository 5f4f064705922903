// NVIDIA's NCCL as the engine of uncompressed stream-ordered calls on device buffers (the fastest there is on
// NVLink and GPUDirect networks); tern keeps the choice, the compressed calls (device_compressed_calls.hpp, whose
// payload exchanges NCCL carries; staged_device_calls.hpp without device codecs) and the host path. The library is
// found by path and loaded with dlopen (TERN_NCCL_LIB, else one the process already has, else the nvidia-nccl wheel
// next to a loaded PyTorch, the CUDA toolkit's, the loader's search path), never tern's own libnccl.so.2, which
// would call back into tern.
//
// tern's datatype, reduction-op and result values are NCCL's, so calls pass them through unchanged.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "exec/operation.hpp"

namespace tern {

struct NcclUniqueId {
  char internal[128];
};

// The loaded library's entry points (NCCL's C ABI, declared here so that the library builds without nccl.h).
struct NcclLibrary {
  using Comm = void*;
  using Stream = void*;
  std::string path;
  int version = 0;  // ncclGetVersion's code, e.g. 23007 for 2.30.7
  int (*getUniqueId)(NcclUniqueId*) = nullptr;
  int (*commInitRank)(Comm*, int, NcclUniqueId, int) = nullptr;
  int (*commDestroy)(Comm) = nullptr;
  int (*commAbort)(Comm) = nullptr;
  int (*commGetAsyncError)(Comm, int*) = nullptr;
  const char* (*getErrorString)(int) = nullptr;
  const char* (*getLastError)(Comm) = nullptr;
  int (*allReduce)(const void*, void*, size_t, int, int, Comm, Stream) = nullptr;
  int (*allGather)(const void*, void*, size_t, int, Comm, Stream) = nullptr;
  int (*reduceScatter)(const void*, void*, size_t, int, int, Comm, Stream) = nullptr;
  int (*broadcast)(const void*, void*, size_t, int, int, Comm, Stream) = nullptr;
  int (*reduce)(const void*, void*, size_t, int, int, int, Comm, Stream) = nullptr;
  int (*send)(const void*, size_t, int, int, Comm, Stream) = nullptr;
  int (*recv)(void*, size_t, int, int, Comm, Stream) = nullptr;
  int (*groupStart)() = nullptr;
  int (*groupEnd)() = nullptr;

  // The process's NCCL (loaded once), or nullptr with the reason in *why.
  static const NcclLibrary* load(std::string* why);
  // Loads the library at path (for load() and tests): nullptr with the reason when it is not a usable NCCL, or is
  // tern's own libnccl.so.2.
  static std::unique_ptr<NcclLibrary> open(const std::string& path, std::string* why);
};

// One NCCL communicator beside a tern communicator, made collectively (Communicator::ncclEngine).
class NcclDeviceEngine {
 public:
  NcclDeviceEngine(const NcclLibrary& lib, NcclLibrary::Comm comm, int rank, int nranks)
      : lib_(lib), comm_(comm), rank_(rank), nranks_(nranks) {}
  ~NcclDeviceEngine();
  NcclDeviceEngine(const NcclDeviceEngine&) = delete;
  NcclDeviceEngine& operator=(const NcclDeviceEngine&) = delete;

  // Whether op goes to NCCL: uncompressed collectives and point-to-point batches (barriers and compressed calls
  // stage).
  static bool runs(const Operation& op);
  // Enqueues op on stream through NCCL; throws tern's Error with NCCL's message when NCCL refuses it.
  void launch(const Operation& op, void* stream);
  // NCCL's asynchronous error, as a tern result (the values are NCCL's), with its message.
  int asyncError(std::string* message);
  void abort();

 private:
  void check(int result, const char* what);

  const NcclLibrary& lib_;
  NcclLibrary::Comm comm_;
  int rank_, nranks_;
  std::atomic<bool> aborted_{false};
};

}  // namespace tern
