// Assignment of parameters to gradient buckets, shared by DDP and ZeRO stages 1-2.
#pragma once

#include <cstddef>
#include <vector>

namespace tern::train::detail {

// Groups tensors, given in the order their gradients are expected (backward order), into buckets: a bucket is
// closed as soon as it holds at least its capacity (firstCapacity for the first, capacity after), so a tensor
// larger than the capacity gets a bucket of its own and order is kept. Returns indices into bytes.
std::vector<std::vector<int>> planBuckets(const std::vector<size_t>& bytes, size_t firstCapacity, size_t capacity);

}  // namespace tern::train::detail
