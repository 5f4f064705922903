// Host buffers for every benchmark: tern's perf binaries and the Open MPI / Gloo baseline drivers allocate the same
// way, so the libraries are compared on identical memory. Header-only and free of tern: the baselines must not
// link it.
//
// Buffers of 2 MiB and more start on a 2 MiB boundary, the granularity of the device buffers nccl-tests gets from
// cudaMalloc and what PyTorch's CPU allocator does for large tensors when it asks for transparent huge pages
// (THP_MEM_ALLOC_ENABLE=1); smaller ones on a 4 KiB page. Every byte is written once, so page faults stay out of
// the timings.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace tern::perf {

constexpr size_t kLargeBufferAlignment = size_t{2} << 20;

inline size_t hostBufferAlignment(size_t bytes) {
  return bytes >= kLargeBufferAlignment ? kLargeBufferAlignment : 4096;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using HostBuffer = std::unique_ptr<char[], FreeDeleter>;

// At least bytes (rounded up to the alignment), zero-filled. Throws std::bad_alloc when memory runs out.
inline HostBuffer allocateHostBuffer(size_t bytes) {
  const size_t align = hostBufferAlignment(bytes);
  const size_t rounded = (std::max<size_t>(bytes, 64) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return HostBuffer(static_cast<char*>(p));
}

}  // namespace tern::perf
