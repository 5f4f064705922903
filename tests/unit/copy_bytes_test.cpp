// copyBytes and streamCopy (src/base/copy_bytes.hpp): the same bytes as memcpy for every relative alignment and
// size around the point where copyBytes switches to its own loop, and nothing written outside the destination.
#include "base/copy_bytes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tern {
namespace {

void expectExactCopies(void (*copy)(void*, const void*, size_t)) {
  constexpr size_t kMax = 3 * kCopyLoopMinBytes + 200;
  std::vector<uint8_t> src(kMax + 128), dst(kMax + 256);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  const size_t sizes[] = {0,
                          1,
                          15,
                          63,
                          64,
                          kCopyLoopMinBytes - 1,
                          kCopyLoopMinBytes,
                          kCopyLoopMinBytes + 1,
                          kCopyLoopMinBytes + 63,
                          2 * kCopyLoopMinBytes + 17,
                          kMax};
  for (size_t srcOff : {0, 1, 8, 16, 48}) {
    for (size_t dstOff = 0; dstOff < 64; ++dstOff) {
      for (size_t n : sizes) {
        std::fill(dst.begin(), dst.end(), 0xA5);
        copy(dst.data() + 64 + dstOff, src.data() + srcOff, n);
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= 64 + dstOff && i < 64 + dstOff + n;
          const uint8_t want = inside ? src[srcOff + (i - 64 - dstOff)] : 0xA5;
          ASSERT_EQ(dst[i], want) << "src+" << srcOff << " dst+" << dstOff << " bytes " << n << " at " << i;
        }
      }
    }
  }
}

TEST(CopyBytes, CopiesExactlyTheBytesAtEveryAlignment) { expectExactCopies(&copyBytes); }

// The loop runs where the destination sits up to a cache line past the source modulo the page: place the two in one
// allocation so that every such distance (and the ones either side) is taken.
TEST(CopyBytes, CopiesExactlyTheBytesAtEveryDistanceNearThePage) {
  constexpr size_t kBytes = 2 * kCopyLoopMinBytes + 77, kPage = 4096;
  std::vector<uint8_t> buf(4 * kPage + 256);
  auto* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + kPage - 1) & ~(kPage - 1));
  for (size_t srcOff : {0, 5, 32}) {
    for (size_t past = 0; past < 80; ++past) {
      uint8_t* src = base + srcOff;
      uint8_t* dst = base + srcOff + kPage + past;  // non-overlapping: the copy is shorter than a page
      for (size_t i = 0; i < kBytes; ++i) src[i] = static_cast<uint8_t>(i * 29 + past);
      std::fill(dst - 16, dst + kBytes + 16, 0xA5);
      copyBytes(dst, src, kBytes);
      for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(dst[i], src[i]) << "past " << past << " at " << i;
      for (size_t i = 1; i <= 16; ++i) {
        ASSERT_EQ(dst[-static_cast<ptrdiff_t>(i)], 0xA5) << "past " << past << ": written before the destination";
        ASSERT_EQ(dst[kBytes + i - 1], 0xA5) << "past " << past << ": written after the destination";
      }
    }
  }
}

TEST(CopyBytes, StreamingCopiesExactlyTheBytesAtEveryAlignment) { expectExactCopies(&streamCopy); }

}  // namespace
}  // namespace tern
