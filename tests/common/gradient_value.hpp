// One element of a gradient-like test input: values in [-1, 1) that differ per rank, call and element, computed
// from the three alone so that any process (a rank, the checker) reproduces any element without the rest.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern::testing {

inline float gradientValue(int rank, int call, size_t i) {
  uint64_t x = (static_cast<uint64_t>(rank) << 48) ^ (static_cast<uint64_t>(call) << 40) ^ i;
  x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
  return static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

}  // namespace tern::testing
