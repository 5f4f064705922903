// Where a buffer handed to the NCCL ABI lives. Every entry point of libnccl.so.2 asks here, in one place, so that
// the device path (issue 20) plugs in by handling BufferKind::kDevice instead of refusing it.
#ifndef TERN_NCCL_BUFFER_KIND_HPP_
#define TERN_NCCL_BUFFER_KIND_HPP_

#include <cstddef>

namespace tern::nccl {

enum class BufferKind {
  kHost,    // ordinary (or tern-allocated) host memory: tern's host path runs it
  kDevice,  // CUDA device memory, or memory this process cannot read (CUDA reserves device ranges that way)
};

// Classifies [p, p + bytes). With CUDA's driver already loaded in the process (a framework using the GPU), the
// driver is asked; otherwise a range the process cannot read is taken for device memory. Null or empty ranges are
// host: the argument checks that follow report those.
BufferKind classifyBuffer(const void* p, size_t bytes);

}  // namespace tern::nccl

#endif  // TERN_NCCL_BUFFER_KIND_HPP_
