// DeviceStreams on the CUDA driver API, loaded with dlopen: libtern links no CUDA library, so a host-only program
// never loads one, and a program that uses CUDA shares its streams and contexts with tern through the one driver.
//
// The few driver types and constants are declared here (values from the CUDA 12/13 toolkits' cuda.h; the driver
// API keeps them stable) so that the library builds without CUDA headers. Entry points come from cuGetProcAddress
// for the CUDA 12.0 ABI, which picks the right versioned symbol (cuMemcpyAsync, cuStreamWaitValue32_v2, ...).
#include <dlfcn.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "base/error.hpp"
#include "core/device_streams.hpp"

namespace tern {

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUstream = void*;
using CUcontext = void*;
using CUevent = void*;
using CUhostFn = void (*)(void*);

constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600;               // CUDA_ERROR_NOT_READY
constexpr int kAttributeMemoryType = 2;           // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr unsigned kMemoryTypeDevice = 2;         // CU_MEMORYTYPE_DEVICE
constexpr unsigned kHostAllocPortableMapped = 3;  // CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP
constexpr unsigned kWaitValueGeq = 0;             // CU_STREAM_WAIT_VALUE_GEQ
constexpr unsigned kEventDisableTiming = 2;       // CU_EVENT_DISABLE_TIMING
constexpr int kAbiVersion = 12000;                // the CUDA 12.0 ABI of every entry point below

struct Driver {
  CUresult (*getProcAddress)(const char*, void**, int, uint64_t, int*) = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*getErrorString)(CUresult, const char**) = nullptr;
  CUresult (*ctxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*ctxGetDevice)(int*) = nullptr;
  CUresult (*deviceGetPCIBusId)(char*, int, int) = nullptr;
  CUresult (*streamGetCtx)(CUstream, CUcontext*) = nullptr;
  CUresult (*pointerGetAttribute)(void*, int, CUdeviceptr) = nullptr;
  CUresult (*memHostAlloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*memFreeHost)(void*) = nullptr;
  CUresult (*memHostGetDevicePointer)(CUdeviceptr*, void*, unsigned) = nullptr;
  CUresult (*memcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*launchHostFunc)(CUstream, CUhostFn, void*) = nullptr;
  CUresult (*streamWaitValue32)(CUstream, CUdeviceptr, uint32_t, unsigned) = nullptr;
  CUresult (*eventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*eventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*eventQuery)(CUevent) = nullptr;
  CUresult (*eventDestroy)(CUevent) = nullptr;
};

template <typename F>
bool resolve(const Driver& d, const char* name, F*& out, std::string* why) {
  void* fn = nullptr;
  int status = 0;
  if (d.getProcAddress(name, &fn, kAbiVersion, 0, &status) != kSuccess || fn == nullptr) {
    *why = std::string("the CUDA driver has no ") + name;
    return false;
  }
  out = reinterpret_cast<F*>(fn);
  return true;
}

class CudaDriverStreams final : public DeviceStreams {
 public:
  explicit CudaDriverStreams(const Driver& d) : d_(d) {}

  bool isDeviceMemory(const void* p) override {
    unsigned type = 0;
    return d_.pointerGetAttribute(&type, kAttributeMemoryType, reinterpret_cast<uintptr_t>(p)) == kSuccess &&
           type == kMemoryTypeDevice;
  }

  void* allocPinned(size_t bytes) override {
    void* p = nullptr;
    check(d_.memHostAlloc(&p, bytes, kHostAllocPortableMapped), "cuMemHostAlloc (pinned staging memory)");
    return p;
  }
  void freePinned(void* p) override {
    if (p != nullptr) d_.memFreeHost(p);
  }

  void copyAsync(void* dst, const void* src, size_t bytes, void* stream) override {
    if (bytes == 0) return;
    useContextOf(stream);
    check(d_.memcpyAsync(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), bytes, stream),
          "cuMemcpyAsync");
  }
  void callHostAsync(void* stream, void (*fn)(void*), void* arg) override {
    useContextOf(stream);
    check(d_.launchHostFunc(stream, fn, arg), "cuLaunchHostFunc");
  }
  void waitFlagAsync(void* stream, const uint32_t* flag, uint32_t value) override {
    useContextOf(stream);
    CUdeviceptr device = 0;
    check(d_.memHostGetDevicePointer(&device, const_cast<uint32_t*>(flag), 0), "cuMemHostGetDevicePointer");
    check(d_.streamWaitValue32(stream, device, value, kWaitValueGeq), "cuStreamWaitValue32");
  }

  uintptr_t recordMarker(void* stream) override {
    useContextOf(stream);
    CUevent event = nullptr;
    check(d_.eventCreate(&event, kEventDisableTiming), "cuEventCreate");
    if (CUresult r = d_.eventRecord(event, stream); r != kSuccess) {
      d_.eventDestroy(event);
      check(r, "cuEventRecord");
    }
    return reinterpret_cast<uintptr_t>(event);
  }
  bool markerReached(uintptr_t marker) override {
    CUresult r = d_.eventQuery(reinterpret_cast<CUevent>(marker));
    if (r == kNotReady) return false;
    check(r, "cuEventQuery");
    return true;
  }
  void releaseMarker(uintptr_t marker) override { d_.eventDestroy(reinterpret_cast<CUevent>(marker)); }
  bool runsNccl() const override { return true; }
  std::string currentDeviceBusId() override {
    CUcontext current = nullptr;
    int device = -1;
    if (d_.ctxGetCurrent(&current) != kSuccess || current == nullptr || d_.ctxGetDevice(&device) != kSuccess) return "";
    char busId[32] = {};
    if (d_.deviceGetPCIBusId(busId, static_cast<int>(sizeof(busId)), device) != kSuccess) return "";
    return busId;
  }
  bool hasCodecs() const override { return compress::builtinDeviceCodecs() != nullptr; }
  compress::DeviceCodecs* codecsFor(void* stream) override {
    compress::DeviceCodecs* codecs = compress::builtinDeviceCodecs();
    if (codecs != nullptr) useContextOf(stream);  // the runtime's kernel launches act on the current context
    return codecs;
  }

 private:
  // Driver calls act on the calling thread's current context. A thread that made the stream through the runtime has
  // it current; a thread that only received the stream gets the stream's context, as the runtime would set it.
  void useContextOf(void* stream) {
    CUcontext current = nullptr;
    if (d_.ctxGetCurrent(&current) == kSuccess && current != nullptr) return;
    if (stream == nullptr) {
      throwError(ternInvalidUsage,
                 "stream-ordered call on the default stream from a thread with no current CUDA "
                 "context (call cudaSetDevice on this thread first)");
    }
    CUcontext ctx = nullptr;
    check(d_.streamGetCtx(stream, &ctx), "cuStreamGetCtx");
    check(d_.ctxSetCurrent(ctx), "cuCtxSetCurrent");
  }

  void check(CUresult r, const char* what) {
    if (r == kSuccess) return;
    const char* text = nullptr;
    if (d_.getErrorString == nullptr || d_.getErrorString(r, &text) != kSuccess || text == nullptr) text = "?";
    throwError(ternSystemError, "CUDA driver: %s failed with error %d (%s)", what, r, text);
  }

  Driver d_;
};

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
DeviceStreams* testStreams = nullptr;

// Loads the driver once; nullptr with the reason when there is none that works.
DeviceStreams* loadDriverStreams(std::string* reason) {
  static std::string failure;
  static DeviceStreams* const streams = [&]() -> DeviceStreams* {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) {
      failure = "no CUDA driver (libcuda.so.1 cannot be loaded)";
      return nullptr;
    }
    Driver d;
    d.getProcAddress = reinterpret_cast<decltype(d.getProcAddress)>(dlsym(lib, "cuGetProcAddress_v2"));
    if (d.getProcAddress == nullptr) {
      failure = "the CUDA driver is older than CUDA 12 (no cuGetProcAddress_v2)";
      return nullptr;
    }
    if (!resolve(d, "cuInit", d.init, &failure) || !resolve(d, "cuGetErrorString", d.getErrorString, &failure) ||
        !resolve(d, "cuCtxGetCurrent", d.ctxGetCurrent, &failure) ||
        !resolve(d, "cuCtxSetCurrent", d.ctxSetCurrent, &failure) ||
        !resolve(d, "cuCtxGetDevice", d.ctxGetDevice, &failure) ||
        !resolve(d, "cuDeviceGetPCIBusId", d.deviceGetPCIBusId, &failure) ||
        !resolve(d, "cuStreamGetCtx", d.streamGetCtx, &failure) ||
        !resolve(d, "cuPointerGetAttribute", d.pointerGetAttribute, &failure) ||
        !resolve(d, "cuMemHostAlloc", d.memHostAlloc, &failure) ||
        !resolve(d, "cuMemFreeHost", d.memFreeHost, &failure) ||
        !resolve(d, "cuMemHostGetDevicePointer", d.memHostGetDevicePointer, &failure) ||
        !resolve(d, "cuMemcpyAsync", d.memcpyAsync, &failure) ||
        !resolve(d, "cuLaunchHostFunc", d.launchHostFunc, &failure) ||
        !resolve(d, "cuStreamWaitValue32", d.streamWaitValue32, &failure) ||
        !resolve(d, "cuEventCreate", d.eventCreate, &failure) ||
        !resolve(d, "cuEventRecord", d.eventRecord, &failure) || !resolve(d, "cuEventQuery", d.eventQuery, &failure) ||
        !resolve(d, "cuEventDestroy", d.eventDestroy, &failure)) {
      return nullptr;
    }
    if (CUresult r = d.init(0); r != kSuccess) {
      failure = "cuInit failed with CUDA error " + std::to_string(r) + " (no usable GPU?)";
      return nullptr;
    }
    return new CudaDriverStreams(d);  // lives as long as the process: callbacks may still name it at exit
  }();
  if (streams == nullptr && reason != nullptr) *reason = failure;
  return streams;
}

}  // namespace

DeviceStreams* deviceStreams(std::string* why) {
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    if (testStreams != nullptr) return testStreams;
  }
  return loadDriverStreams(why);
}

std::string currentGpuBusId() {
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    if (testStreams != nullptr) return testStreams->currentDeviceBusId();
  }
  // A program that has not loaded the driver uses no GPU: it neither pays for loading one nor is a GPU rank.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return "";
  dlclose(lib);  // drops only the reference NOLOAD took
  DeviceStreams* streams = loadDriverStreams(nullptr);
  return streams != nullptr ? streams->currentDeviceBusId() : "";
}

void setDeviceStreamsForTesting(DeviceStreams* streams) {
  std::lock_guard<std::mutex> lock(registryMutex());
  testStreams = streams;
}

}  // namespace tern
