// A tiny MLP (ReLU hidden layers, softmax cross-entropy) and its data, for checking that distributed training
// steps give the parameters a single process gets. Parameters are reached through callbacks so that the same
// model runs on caller-owned tensors (reference, DDP) and on ZeRO's gathered layers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace tern::train::testing {

struct TinyData {
  size_t in = 0;
  std::vector<float> x;
  std::vector<int> y;
};

inline TinyData makeTinyData(size_t samples, size_t in, int classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  TinyData d;
  d.in = in;
  d.x.resize(samples * in);
  for (auto& v : d.x) v = n(rng);
  for (size_t s = 0; s < samples; ++s) {
    // A learnable rule: the class is the index of the largest of the first `classes` inputs.
    const float* r = &d.x[s * in];
    d.y.push_back(static_cast<int>(std::max_element(r, r + classes) - r));
  }
  return d;
}

struct LayerAccess {
  std::function<void(int)> before = [](int) {};
  std::function<void(int)> after = [](int) {};
  std::function<const float*(int)> w, b;
  std::function<float*(int)> dw, db;
  std::function<void(int)> ready = [](int) {};
};

struct TinyMlp {
  std::vector<size_t> dims;  // e.g. {6, 12, 12, 3}
  int layers() const { return static_cast<int>(dims.size()) - 1; }

  // Weights W_l (in x out) then biases b_l, layer by layer.
  std::vector<std::vector<float>> init(uint64_t seed) const {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<float>> p;
    for (int l = 0; l < layers(); ++l) {
      std::uniform_real_distribution<float> u(-0.5f, 0.5f);
      std::vector<float> w(dims[l] * dims[l + 1]), b(dims[l + 1]);
      for (auto& v : w) v = u(rng);
      for (auto& v : b) v = 0.1f * u(rng);
      p.push_back(w);
      p.push_back(b);
    }
    return p;
  }

  // Forward + backward on samples [first, first + n); gradients are of the mean loss over those samples. Layers
  // are used one at a time (before/after bracket each use), backward reports each layer when its grads are in.
  double step(const TinyData& d, size_t first, size_t n, const LayerAccess& a) const {
    const int L = layers();
    std::vector<std::vector<float>> act(L + 1);
    act[0].assign(d.x.begin() + first * d.in, d.x.begin() + (first + n) * d.in);
    for (int l = 0; l < L; ++l) {
      a.before(l);
      const float* w = a.w(l);
      const float* b = a.b(l);
      size_t in = dims[l], out = dims[l + 1];
      act[l + 1].assign(n * out, 0.0f);
      for (size_t s = 0; s < n; ++s) {
        for (size_t j = 0; j < out; ++j) {
          float acc = b[j];
          for (size_t k = 0; k < in; ++k) acc += act[l][s * in + k] * w[k * out + j];
          act[l + 1][s * out + j] = (l + 1 < L) ? std::max(acc, 0.0f) : acc;
        }
      }
      a.after(l);
    }
    const size_t C = dims.back();
    std::vector<float> g(n * C);
    double loss = 0;
    for (size_t s = 0; s < n; ++s) {
      const float* z = &act[L][s * C];
      float mx = *std::max_element(z, z + C);
      double sum = 0;
      for (size_t c = 0; c < C; ++c) sum += std::exp(double(z[c] - mx));
      int label = d.y[first + s];
      loss += std::log(sum) - (z[label] - mx);
      for (size_t c = 0; c < C; ++c) {
        g[s * C + c] = float((std::exp(double(z[c] - mx)) / sum - (int(c) == label ? 1.0 : 0.0)) / double(n));
      }
    }
    for (int l = L - 1; l >= 0; --l) {
      a.before(l);
      const float* w = a.w(l);
      float* dw = a.dw(l);
      float* db = a.db(l);
      size_t in = dims[l], out = dims[l + 1];
      std::fill(dw, dw + in * out, 0.0f);
      std::fill(db, db + out, 0.0f);
      std::vector<float> gin(n * in, 0.0f);
      for (size_t s = 0; s < n; ++s) {
        for (size_t j = 0; j < out; ++j) {
          float gj = g[s * out + j];
          db[j] += gj;
          for (size_t k = 0; k < in; ++k) {
            dw[k * out + j] += act[l][s * in + k] * gj;
            gin[s * in + k] += w[k * out + j] * gj;
          }
        }
      }
      a.ready(l);
      a.after(l);
      if (l > 0) {
        for (size_t i = 0; i < gin.size(); ++i) gin[i] = act[l][i] > 0 ? gin[i] : 0.0f;
        g.swap(gin);
      }
    }
    return loss / double(n);
  }
};

// Largest |a - b| / max(1, |b|) over two parameter sets.
inline double maxRelDiff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double m = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    for (size_t i = 0; i < a[t].size(); ++i) {
      m = std::max(m, std::abs(double(a[t][i]) - b[t][i]) / std::max(1.0, std::abs(double(b[t][i]))));
    }
  }
  return m;
}

}  // namespace tern::train::testing
