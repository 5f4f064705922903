#include "bucket_plan.hpp"

namespace tern::train::detail {

std::vector<std::vector<int>> planBuckets(const std::vector<size_t>& bytes, size_t firstCapacity, size_t capacity) {
  std::vector<std::vector<int>> buckets;
  std::vector<int> open;
  size_t filled = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    open.push_back(static_cast<int>(i));
    filled += bytes[i];
    // PyTorch's rule: close once the limit is reached (not before adding), so the first bucket really is small
    // and communication starts after the first few gradients.
    if (filled >= (buckets.empty() ? firstCapacity : capacity)) {
      buckets.push_back(std::move(open));
      open.clear();
      filled = 0;
    }
  }
  if (!open.empty()) buckets.push_back(std::move(open));
  return buckets;
}

}  // namespace tern::train::detail
