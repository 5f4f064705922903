// copyBytes and streamCopy (src/base/copy_bytes.hpp): the same bytes as memcpy for every relative alignment and
// size around the point where copyBytes switches to its own loop, and nothing written outside the destination.
#include "base/copy_bytes.hpp"

#include <gtest/gtest.h>

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

TEST(CopyBytes, StreamingCopiesExactlyTheBytesAtEveryAlignment) { expectExactCopies(&streamCopy); }

}  // namespace
}  // namespace tern
