#include "dataset.hpp"

#include <algorithm>
#include <random>

namespace mlp {

Dataset makeDataset(const TaskSpec& spec, size_t samples, int split) {
  std::mt19937_64 taskRng(spec.seed);
  std::uniform_int_distribution<uint32_t> anyFeature(0, static_cast<uint32_t>(spec.features - 1));
  std::vector<std::vector<uint32_t>> pools(spec.classes);
  for (auto& pool : pools) {
    pool.resize(spec.poolSize);
    for (auto& f : pool) f = anyFeature(taskRng);
  }
  std::mt19937_64 rng(spec.seed * 1000003 + 17 + split);
  std::uniform_int_distribution<int32_t> anyClass(0, static_cast<int32_t>(spec.classes - 1));
  std::uniform_int_distribution<size_t> inPool(0, spec.poolSize - 1);
  std::bernoulli_distribution fromPool(spec.signal);
  Dataset d;
  d.nnz = spec.nnz;
  d.labels.resize(samples);
  d.indices.resize(samples * spec.nnz);
  for (size_t i = 0; i < samples; ++i) {
    int32_t y = anyClass(rng);
    d.labels[i] = y;
    for (size_t k = 0; k < spec.nnz; ++k) {
      d.indices[i * spec.nnz + k] = fromPool(rng) ? pools[y][inPool(rng)] : anyFeature(rng);
    }
  }
  return d;
}

void densify(const Dataset& data, const TaskSpec& spec, const std::vector<uint32_t>& order, size_t first, size_t count,
             std::vector<float>& x, std::vector<int32_t>& y) {
  x.assign(count * spec.features, 0.0f);
  y.resize(count);
  for (size_t b = 0; b < count; ++b) {
    size_t s = order[first + b];
    y[b] = data.labels[s];
    for (size_t k = 0; k < data.nnz; ++k) x[b * spec.features + data.indices[s * data.nnz + k]] += 1.0f;
  }
}

}  // namespace mlp
