// When the shared-memory collectives write their output with non-temporal (streaming) stores (streamCopy,
// base/copy_bytes.hpp).
//
// Why: a collective's output of many megabytes does not fit the caches, and an ordinary store first reads each
// destination line from memory (read-for-ownership) only to overwrite it whole, so memory traffic for the output is
// doubled. Streaming stores write whole lines without reading them. For outputs that fit in cache the ordinary
// memcpy is better (the caller reads the result soon, from cache), so callers choose per call by size.
#pragma once

#include <cstddef>

#include "base/copy_bytes.hpp"

namespace tern::shm {

// Outputs at least this large are written with streaming stores (8 MiB: well past the L2 of a core; tests lower it
// to cover the streaming path with small buffers).
size_t streamingOutputBytes();
void setStreamingOutputBytesForTesting(size_t bytes);

inline void copyOut(void* dst, const void* src, size_t bytes, bool streaming) {
  if (streaming) {
    streamCopy(dst, src, bytes);
  } else {
    copyBytes(dst, src, bytes);
  }
}

}  // namespace tern::shm
