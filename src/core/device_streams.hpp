// The CUDA work the stream-ordered calls (tern_cuda.h) enqueue on a caller's stream: copies between device memory
// and pinned host memory, a host callback, and a wait on a flag in pinned memory. Behind an interface so that the
// staging logic (core/staged_device_calls.hpp) is the same code on a GPU and in the unit tests, where host threads
// pose as streams (a machine without a GPU cannot run the real thing).
//
// The real implementation (cuda_driver_streams.cpp) talks to the CUDA driver (libcuda.so.1) directly, loaded when a
// program first makes a stream-ordered call: libtern links no CUDA library, so host-only programs neither load nor
// need one, and any CUDA runtime the program uses (its own, PyTorch's) shares the driver's streams and contexts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "compress/device_codecs.hpp"

namespace tern {

class DeviceStreams {
 public:
  virtual ~DeviceStreams() = default;

  // Whether p is device memory, which the host path cannot touch and must be staged. Host memory (pinned or not)
  // is used in place.
  virtual bool isDeviceMemory(const void* p) = 0;
  // Host memory that device copies reach asynchronously and that the device can read (for waitFlagAsync).
  virtual void* allocPinned(size_t bytes) = 0;
  virtual void freePinned(void* p) = 0;
  // Enqueued on stream (an opaque cudaStream_t; nullptr is the default stream):
  // dst = src, bytes long; either side may be device or pinned host memory.
  virtual void copyAsync(void* dst, const void* src, size_t bytes, void* stream) = 0;
  // fn(arg) on a driver thread once the work before it on stream has completed; fn must not block or call CUDA.
  virtual void callHostAsync(void* stream, void (*fn)(void*), void* arg) = 0;
  // The stream waits until (int32_t)(*flag - value) >= 0; flag lies in allocPinned memory, written by the host.
  virtual void waitFlagAsync(void* stream, const uint32_t* flag, uint32_t value) = 0;
  // A marker of everything enqueued on stream so far (a CUDA event), so that staging memory is reused only after
  // the stream is done with it.
  virtual uintptr_t recordMarker(void* stream) = 0;
  virtual bool markerReached(uintptr_t marker) = 0;
  virtual void releaseMarker(uintptr_t marker) = 0;
  // Whether these are a real GPU's streams, which NVIDIA's NCCL can run on (test doubles are not).
  virtual bool runsNccl() const { return false; }
  // PCI bus id of the calling thread's current device ("0000:1b:00.0"), "" when it has no current context: the GPU
  // this rank drives, as the job topology places it (NCCL, too, takes the current device at init).
  virtual std::string currentDeviceBusId() { return ""; }
  // The codecs that run on stream (compress/device_codecs.hpp), with the calling thread made ready to launch work on
  // it; nullptr where there are none (a library built without CUDA): compressed calls on device buffers then stage
  // whole tensors and encode on the CPU.
  virtual compress::DeviceCodecs* codecsFor(void* /*stream*/) { return nullptr; }
  // Whether codecsFor gives codecs at all (libtern built with them), asked without a stream: the ranks agree on it
  // once (Communicator::ncclEngine), and where any lacks them no call votes on compressing on the device.
  virtual bool hasCodecs() const { return false; }
};

// The process's CUDA driver streams, or nullptr with the reason in *why (no libcuda.so.1, no device, an old driver).
// A test double set by setDeviceStreamsForTesting takes precedence.
DeviceStreams* deviceStreams(std::string* why);
void setDeviceStreamsForTesting(DeviceStreams* streams);
// The bus id of the calling thread's current CUDA device, "" when there is none or the process has not loaded the
// CUDA driver (a CPU-only program never loads it for this); the test double's answer when one is set.
std::string currentGpuBusId();

}  // namespace tern
