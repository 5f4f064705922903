// Synthetic sparse classification data. Each class owns a random pool of features; a sample of class y activates
// nnz features, each drawn from y's pool with probability `signal` and uniformly from all features otherwise.
// The label is therefore only visible through a handful of informative features among noise, which gives a task
// a small MLP learns in a few epochs without reaching 100%, and whose first layer is wide but sparse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlp {

struct TaskSpec {
  size_t features = 8192;
  size_t classes = 16;
  size_t nnz = 256;      // active features per sample
  size_t poolSize = 64;  // informative features per class
  double signal = 0.04;  // probability that an active feature comes from the class pool
  uint64_t seed = 1;
};

struct Dataset {
  size_t nnz = 0;
  std::vector<uint32_t> indices;  // size() * nnz active feature ids
  std::vector<int32_t> labels;
  size_t size() const { return labels.size(); }
};

// Same spec and split -> same data on every rank. split 0 is training, 1 test (disjoint random streams).
Dataset makeDataset(const TaskSpec& spec, size_t samples, int split);

// Writes samples order[first .. first+count) as dense rows (count x features) into x and their labels into y.
void densify(const Dataset& data, const TaskSpec& spec, const std::vector<uint32_t>& order, size_t first, size_t count,
             std::vector<float>& x, std::vector<int32_t>& y);

}  // namespace mlp
