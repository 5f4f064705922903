#include "base/copy_bytes.hpp"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace tern {

namespace {

// 64 bytes per step: unaligned 16-byte loads, aligned 16-byte stores (ordinary or streaming) after an ordinary head
// that aligns the destination. SSE2: every x86-64 CPU has it; elsewhere memcpy.
template <bool kStreaming>
void vectorCopy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    __m128i v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16 * k));
    for (int k = 0; k < 4; ++k) {
      auto* to = reinterpret_cast<__m128i*>(d + i + 16 * k);
      if constexpr (kStreaming) {
        _mm_stream_si128(to, v[k]);
      } else {
        _mm_store_si128(to, v[k]);
      }
    }
  }
  std::memcpy(d + i, s + i, bytes - i);
  // Streaming stores are weakly ordered: fence before anything (a flag) that publishes the data.
  if constexpr (kStreaming) _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace

void detail::copyMisaligned(void* dst, const void* src, size_t bytes) { vectorCopy<false>(dst, src, bytes); }

void streamCopy(void* dst, const void* src, size_t bytes) { vectorCopy<true>(dst, src, bytes); }

}  // namespace tern
