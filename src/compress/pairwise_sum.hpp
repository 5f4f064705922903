// The one summation order used for per-chunk float sums (the sign codec's mean |x| and sum x^2), fixed so that the
// scalar CPU code, AVX2, AVX-512 and a CUDA warp all produce the same bits:
//
//  1. The chunk is cut into blocks of kSumBlock = 1024 elements (the last one may be short; missing elements count
//     as +0, which changes no sum of non-negative terms).
//  2. In a block, lane j (0..31) adds the terms of elements j, j+32, j+64, ... in that order, starting from +0.
//     (AVX-512: two 16-lane accumulators; AVX2: four 8-lane accumulators; CUDA: one warp, lane j.)
//  3. The 32 lane sums are folded with the tree lane[j] += lane[j + w] for w = 16, 8, 4, 2, 1 (a warp's shuffle-down
//     reduction, and the SIMD halving reduction).
//  4. Block sums are combined by an aligned binary tree: level by level, neighbours (2i, 2i+1) are added and an odd
//     last one moves up unchanged. Any aligned power-of-two grouping computes the same tree, so a GPU can reduce
//     block sums per CTA and then across CTAs; the CPU does it streaming with a binary-counter stack.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/codec_math.hpp"

namespace tern::compress {

inline constexpr int kSumLanes = 32;
inline constexpr int kSumSteps = 32;
inline constexpr size_t kSumBlock = static_cast<size_t>(kSumLanes) * kSumSteps;

// Step 3: folds lane[0..31] in place; returns the block sum.
TERN_HD float foldLanes(float* lane) {
  for (int w = kSumLanes / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lane[j] = addRn(lane[j], lane[j + w]);
  }
  return lane[0];
}

// Step 4 on the CPU: feed block sums in order, read total() at the end. 64 levels cover any size_t count.
class PairwiseSum {
 public:
  void add(float blockSum) {
    float v = blockSum;
    int level = 0;
    while (depth_ > 0 && level_[depth_ - 1] == level) {
      v = addRn(stack_[--depth_], v);
      ++level;
    }
    stack_[depth_] = v;
    level_[depth_] = level;
    ++depth_;
  }

  // The remaining stack holds complete subtrees of decreasing size; the tree joins them right to left.
  float total() const {
    if (depth_ == 0) return 0.0f;
    float v = stack_[depth_ - 1];
    for (int i = depth_ - 2; i >= 0; --i) v = addRn(stack_[i], v);
    return v;
  }

 private:
  float stack_[66];
  int level_[66];
  int depth_ = 0;
};

}  // namespace tern::compress
