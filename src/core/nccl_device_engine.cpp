#include "core/nccl_device_engine.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

namespace tern {

namespace {

constexpr int kNcclInt8 = 0;  // ncclInt8: point-to-point and all-to-all blocks move as bytes

template <typename F>
bool resolve(void* handle, const char* name, F*& out, std::string* why) {
  out = reinterpret_cast<F*>(dlsym(handle, name));
  if (out == nullptr) *why = std::string("it has no ") + name;
  return out != nullptr;
}

// Paths of the loaded objects named libnccl.so*: a program (PyTorch) may already have NCCL in memory.
std::vector<std::string> loadedNcclPaths() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const char* name = info->dlpi_name;
        if (name == nullptr || *name == 0) return 0;
        const char* base = std::strrchr(name, '/');
        base = base == nullptr ? name : base + 1;
        if (std::strncmp(base, "libnccl.so", 10) == 0) static_cast<std::vector<std::string>*>(data)->push_back(name);
        return 0;
      },
      &paths);
  return paths;
}

// The nvidia-nccl wheel beside a loaded PyTorch: site-packages/torch/lib/libtorch_cuda.so and
// site-packages/nvidia/nccl/lib/libnccl.so.2.
std::string ncclBesideTorch() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const std::string name = info->dlpi_name == nullptr ? "" : info->dlpi_name;
        const std::string tail = "/torch/lib/libtorch_cuda.so";
        if (name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0) {
          *static_cast<std::string*>(data) =
              name.substr(0, name.size() - tail.size()) + "/nvidia/nccl/lib/libnccl.so.2";
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

}  // namespace

std::unique_ptr<NcclLibrary> NcclLibrary::open(const std::string& path, std::string* why) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    *why = path + ": cannot be loaded (" + (e != nullptr ? e : "?") + ")";
    return nullptr;
  }
  // tern's libnccl.so.2 links libtern: a lookup through it finds tern's own API.
  if (dlsym(handle, "ternCommInitRank") != nullptr) {
    *why = path + " is tern's own libnccl.so.2, not NVIDIA's NCCL";
    dlclose(handle);
    return nullptr;
  }
  auto lib = std::make_unique<NcclLibrary>();
  lib->path = path;
  int (*getVersion)(int*) = nullptr;
  std::string missing;
  const bool ok = resolve(handle, "ncclGetVersion", getVersion, &missing) &&
                  resolve(handle, "ncclGetUniqueId", lib->getUniqueId, &missing) &&
                  resolve(handle, "ncclCommInitRank", lib->commInitRank, &missing) &&
                  resolve(handle, "ncclCommDestroy", lib->commDestroy, &missing) &&
                  resolve(handle, "ncclCommAbort", lib->commAbort, &missing) &&
                  resolve(handle, "ncclCommGetAsyncError", lib->commGetAsyncError, &missing) &&
                  resolve(handle, "ncclGetErrorString", lib->getErrorString, &missing) &&
                  resolve(handle, "ncclGetLastError", lib->getLastError, &missing) &&
                  resolve(handle, "ncclAllReduce", lib->allReduce, &missing) &&
                  resolve(handle, "ncclAllGather", lib->allGather, &missing) &&
                  resolve(handle, "ncclReduceScatter", lib->reduceScatter, &missing) &&
                  resolve(handle, "ncclBroadcast", lib->broadcast, &missing) &&
                  resolve(handle, "ncclReduce", lib->reduce, &missing) &&
                  resolve(handle, "ncclSend", lib->send, &missing) &&
                  resolve(handle, "ncclRecv", lib->recv, &missing) &&
                  resolve(handle, "ncclGroupStart", lib->groupStart, &missing) &&
                  resolve(handle, "ncclGroupEnd", lib->groupEnd, &missing);
  if (!ok) {
    *why = path + ": not a usable NCCL (" + missing + ")";
    dlclose(handle);
    return nullptr;
  }
  if (getVersion(&lib->version) != 0 || lib->version < 21800) {
    *why = path + ": NCCL " + std::to_string(lib->version) + " is older than 2.18, which tern needs";
    dlclose(handle);
    return nullptr;
  }
  return lib;  // the handle stays open for the process's life
}

const NcclLibrary* NcclLibrary::load(std::string* why) {
  static std::string failure;
  static const NcclLibrary* const lib = []() -> const NcclLibrary* {
    std::vector<std::string> candidates;
    const std::string chosen = knobs().ncclLib;
    if (!chosen.empty()) {
      candidates.push_back(chosen);
    } else {
      candidates = loadedNcclPaths();
      if (std::string t = ncclBesideTorch(); !t.empty()) candidates.push_back(t);
      candidates.emplace_back("/usr/local/cuda/lib64/libnccl.so.2");
      candidates.emplace_back("libnccl.so.2");
    }
    std::string reasons;
    for (const std::string& path : candidates) {
      std::string why;
      if (auto l = open(path, &why)) {
        TERN_LOG(kInfo, kInit, -1, "device engine: NCCL %d from %s", l->version, l->path.c_str());
        return l.release();
      }
      reasons += (reasons.empty() ? "" : "; ") + why;
    }
    failure = "no NVIDIA NCCL found (" + reasons + ")";
    return nullptr;
  }();
  if (lib == nullptr && why != nullptr) *why = failure;
  return lib;
}

NcclDeviceEngine::~NcclDeviceEngine() {
  if (comm_ != nullptr && !aborted_.load()) lib_.commDestroy(comm_);
}

bool NcclDeviceEngine::runs(const Operation& op) {
  if (op.compressor != nullptr || op.implicitCompression) return false;
  switch (op.args.coll) {
    case Collective::kAllReduce:
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kPointToPoint:
      return true;
    case Collective::kAlltoAll:
    case Collective::kAlltoAllv:
      return !op.args.inPlace;  // a batch of sends and receives cannot overwrite what it still sends
    default:
      return false;
  }
}

void NcclDeviceEngine::check(int result, const char* what) {
  if (result == 0) return;
  const char* last = lib_.getLastError(comm_);
  throwError(static_cast<ternResult_t>(result), "rank %d: %s (NCCL %d) failed: %s%s%s", rank_, what, lib_.version,
             lib_.getErrorString(result), last != nullptr && *last != 0 ? ": " : "", last != nullptr ? last : "");
}

void NcclDeviceEngine::launch(const Operation& op, void* stream) {
  if (aborted_.load()) throwError(ternRemoteError, "rank %d: the communicator was aborted", rank_);
  const CollArgs& a = op.args;
  const int t = static_cast<int>(a.dtype), r = static_cast<int>(a.op);
  const size_t e = dataTypeSize(a.dtype);
  switch (a.coll) {
    case Collective::kAllReduce:
      return check(lib_.allReduce(op.input, op.output, a.count, t, r, comm_, stream), "ncclAllReduce");
    case Collective::kAllGather:
      return check(lib_.allGather(op.input, op.output, a.count, t, comm_, stream), "ncclAllGather");
    case Collective::kReduceScatter:
      return check(lib_.reduceScatter(op.input, op.output, a.count, t, r, comm_, stream), "ncclReduceScatter");
    case Collective::kBroadcast:
      return check(lib_.broadcast(op.input, op.output, a.count, t, a.root, comm_, stream), "ncclBroadcast");
    case Collective::kReduce:
      return check(lib_.reduce(op.input, op.output, a.count, t, r, a.root, comm_, stream), "ncclReduce");
    default:
      break;
  }
  // All-to-all and point-to-point batches: one NCCL group of sends and receives, bytes as int8.
  const char* in = static_cast<const char*>(op.input);
  char* out = static_cast<char*>(op.output);
  check(lib_.groupStart(), "ncclGroupStart");
  int result = 0;
  const char* what = "ncclSend/ncclRecv";
  if (a.coll == Collective::kAlltoAll || a.coll == Collective::kAlltoAllv) {
    for (int q = 0; q < nranks_ && result == 0; ++q) {
      const size_t qs = q;
      const bool v = a.coll == Collective::kAlltoAllv;
      const size_t sendBytes = (v ? a.sendCounts[qs] : a.count) * e, recvBytes = (v ? a.recvCounts[qs] : a.count) * e;
      const size_t sendAt = (v ? a.sendDispls[qs] : a.count * qs) * e,
                   recvAt = (v ? a.recvDispls[qs] : a.count * qs) * e;
      if (sendBytes > 0) result = lib_.send(in + sendAt, sendBytes, kNcclInt8, q, comm_, stream);
      if (result == 0 && recvBytes > 0) result = lib_.recv(out + recvAt, recvBytes, kNcclInt8, q, comm_, stream);
    }
  } else {
    for (const UserTransfer& x : op.transfers) {
      if (result != 0) break;
      result = x.isSend ? lib_.send(x.data, x.bytes, kNcclInt8, x.peer, comm_, stream)
                        : lib_.recv(x.data, x.bytes, kNcclInt8, x.peer, comm_, stream);
    }
  }
  const int end = lib_.groupEnd();
  check(result != 0 ? result : end, what);
}

int NcclDeviceEngine::asyncError(std::string* message) {
  int result = 0;
  if (lib_.commGetAsyncError(comm_, &result) != 0) return 0;
  if (result != 0 && result != 7 /* ncclInProgress */ && message != nullptr) {
    const char* last = lib_.getLastError(comm_);
    *message = std::string("NCCL: ") + lib_.getErrorString(result) + (last != nullptr ? std::string(": ") + last : "");
  }
  return result == 7 ? 0 : result;
}

// NCCL allows an abort from any thread; it ends the NCCL work in flight, so streams waiting on it go on.
void NcclDeviceEngine::abort() {
  if (!aborted_.exchange(true)) lib_.commAbort(comm_);
}

}  // namespace tern
