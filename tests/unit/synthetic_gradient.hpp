// A reproducible pseudo-gradient for the compressed-collective tests: values in [-10, 10] with three decimals,
// different per rank and per step, so error feedback and every codec see varied signs and magnitudes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tern::testing {

inline std::vector<float> syntheticGradient(int rank, int step, size_t n) {
  std::vector<float> g(n);
  uint32_t x = 2654435761u * static_cast<uint32_t>(rank + 1) + 40503u * static_cast<uint32_t>(step + 7);
  for (auto& v : g) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v = (static_cast<float>(x % 20001) - 10000.0f) / 1000.0f;
  }
  return g;
}

}  // namespace tern::testing
