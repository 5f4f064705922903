#include "zero_units.hpp"

#include <functional>
#include <map>

#include "bucket_plan.hpp"

namespace tern::train::detail {

void TrackedBuffer::allocate(size_t bytes, MemoryAccount* account) {
  free();
  data_ = std::make_unique<std::byte[]>(bytes);  // value-initialised: zeroes, which padding relies on
  bytes_ = bytes;
  account_ = account;
  if (account_ != nullptr) account_->add(bytes_);
}

void TrackedBuffer::free() {
  if (data_ == nullptr) return;
  if (account_ != nullptr) account_->sub(bytes_);
  data_.reset();
  bytes_ = 0;
}

std::vector<std::vector<int>> planUnits(const std::vector<ZeroParam>& params, int stage, size_t elementSize,
                                        size_t bucketBytes) {
  std::vector<std::vector<int>> units;
  if (stage == 3) {
    std::map<int, std::vector<int>, std::greater<>> byLayer;
    for (int i = static_cast<int>(params.size()) - 1; i >= 0; --i) {
      if (params[i].count > 0) byLayer[params[i].layer].push_back(i);
    }
    for (auto& [layer, members] : byLayer) units.push_back(std::move(members));
    return units;
  }
  std::vector<int> order;
  std::vector<size_t> bytes;
  for (int i = static_cast<int>(params.size()) - 1; i >= 0; --i) {
    if (params[i].count == 0) continue;
    order.push_back(i);
    bytes.push_back(params[i].count * elementSize);
  }
  for (auto& group : planBuckets(bytes, std::min<size_t>(size_t{1} << 20, bucketBytes), bucketBytes)) {
    std::vector<int> members;
    members.reserve(group.size());
    for (int k : group) members.push_back(order[k]);
    units.push_back(std::move(members));
  }
  return units;
}

}  // namespace tern::train::detail
