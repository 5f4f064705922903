// Where a buffer lives, and the typed reference through which buffers travel on the data path.
//
// The executor, the transports and the compute backend take a MemRef (pointer, bytes, memory kind) rather than a
// bare pointer, so that a transport or a kernel is chosen for the memory it can touch: host memory is readable by
// every transport and by the CPU kernels; host memory from ternMemAlloc is also mappable by same-host peers
// (zero-copy); device memory needs a device-capable transport and a device compute backend, and the others refuse
// it with a clear error instead of dereferencing a pointer they cannot read.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {

enum class MemoryKind : uint8_t {
  kHost,            // ordinary process memory
  kHostRegistered,  // host memory from ternMemAlloc: shared-memory backed, same-host peers may map it
  kDevice,          // GPU memory (CUDA device pointer)
};

// "host", "host-registered", "device": for messages.
inline const char* memoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kHostRegistered:
      return "host-registered";
    case MemoryKind::kDevice:
      return "device";
  }
  return "unknown";
}

// Host memory of either kind is ordinary memory to the CPU.
inline bool isHostMemory(MemoryKind kind) { return kind != MemoryKind::kDevice; }

// A writable byte range of one memory kind.
struct MemRef {
  void* data = nullptr;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::kHost;

  // The sub-range [offset, offset + n): callers check the bounds (the executor does, once per schedule).
  MemRef slice(size_t offset, size_t n) const { return {static_cast<char*>(data) + offset, n, kind}; }
};

// A read-only byte range of one memory kind; every MemRef converts to one.
struct ConstMemRef {
  const void* data = nullptr;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::kHost;

  ConstMemRef() = default;
  ConstMemRef(const void* d, size_t n, MemoryKind k) : data(d), bytes(n), kind(k) {}
  ConstMemRef(const MemRef& m) : data(m.data), bytes(m.bytes), kind(m.kind) {}  // NOLINT(google-explicit-constructor)

  ConstMemRef slice(size_t offset, size_t n) const { return {static_cast<const char*>(data) + offset, n, kind}; }
};

inline MemRef hostMemory(void* data, size_t bytes) { return {data, bytes, MemoryKind::kHost}; }
inline ConstMemRef hostMemory(const void* data, size_t bytes) { return {data, bytes, MemoryKind::kHost}; }

}  // namespace tern
