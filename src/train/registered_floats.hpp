// A float buffer in memory from ternMemAlloc, for the rows the MoE layer sends.
//
// Why: where every rank's input to an all-to-all(v) on one host is such memory, each peer maps it and copies its
// blocks straight out of it, one plain copy, instead of a kernel copy (CMA) or two copies through the staging slots
// (docs/ALGORITHMS.md, shm_mapped). The layer owns these buffers and refills them every step, so registering them
// costs one allocation (and one mapping per peer) whenever a step needs more rows than any before it.
#pragma once

#include <algorithm>
#include <cstddef>

#include "common.hpp"

namespace tern::train::detail {

class RegisteredFloats {
 public:
  RegisteredFloats() = default;
  ~RegisteredFloats() { ternMemFree(data_); }
  RegisteredFloats(const RegisteredFloats&) = delete;
  RegisteredFloats& operator=(const RegisteredFloats&) = delete;

  // n floats whose values are unspecified: for callers that overwrite every one. Grows by at least half again, so
  // that steps whose row counts wander allocate (and peers map) only a few times.
  void resizeForOverwrite(size_t n) {
    if (n > capacity_) {
      const size_t capacity = std::max(n, capacity_ + capacity_ / 2);
      void* p = nullptr;
      check(ternMemAlloc(&p, capacity * sizeof(float)), nullptr, "ternMemAlloc for the MoE layer's rows");
      ternMemFree(data_);
      data_ = static_cast<float*>(p);
      capacity_ = capacity;
    }
    size_ = n;
  }
  // n zeros.
  void assignZeros(size_t n) {
    resizeForOverwrite(n);
    std::fill(data_, data_ + n, 0.0f);
  }

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }
  float& operator[](size_t i) { return data_[i]; }
  const float& operator[](size_t i) const { return data_[i]; }

 private:
  float* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace tern::train::detail
