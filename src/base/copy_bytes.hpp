// A memcpy for the data path that stays fast whatever the relative placement of its two buffers.
//
// Why: glibc's memcpy copies mid-size blocks (from a few KiB to about the last-level cache) with `rep movsb`, which
// on some CPUs (AMD Zen 3 among them) runs an order of magnitude slower when the destination sits a few bytes past
// the source modulo the 4 KiB page (1-15 bytes in a probe on Zen 3; every other distance ran at memcpy's usual rate).
// The data path copies between page-aligned staging buffers and user buffers at any address (malloc returns
// 16-byte-aligned blocks), so an output allocated with malloc made a whole collective several times slower. A plain
// vector loop has no such cliff but runs slower than memcpy elsewhere: copyBytes uses it only for destinations up to
// a cache line past the source modulo the page, a margin around the cliff, and memcpy everywhere else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tern {

// Blocks smaller than this go to memcpy whatever their alignment (its small-size paths are vector loops already).
inline constexpr size_t kCopyLoopMinBytes = 1024;

namespace detail {
void copyMisaligned(void* dst, const void* src, size_t bytes);
}

// memcpy(dst, src, bytes) with non-temporal (streaming) stores, for outputs larger than the caches: an ordinary
// store first reads each destination line from memory only to overwrite it whole; a streaming one does not. Ends
// with a store fence, so that a flag posted after it publishes the data.
void streamCopy(void* dst, const void* src, size_t bytes);

// memcpy(dst, src, bytes) for buffers that do not overlap.
inline void copyBytes(void* dst, const void* src, size_t bytes) {
  const uintptr_t past = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  if (bytes < kCopyLoopMinBytes || past == 0 || past >= 64) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return;
  }
  detail::copyMisaligned(dst, src, bytes);
}

}  // namespace tern
