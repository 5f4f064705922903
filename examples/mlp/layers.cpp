#include "layers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace mlp {

void linearForward(const float* x, size_t batch, size_t in, size_t out, const float* w, const float* bias, float* y) {
  for (size_t b = 0; b < batch; ++b) {
    float* yb = y + b * out;
    std::memcpy(yb, bias, out * sizeof(float));
    const float* xb = x + b * in;
    for (size_t k = 0; k < in; ++k) {
      const float xv = xb[k];
      if (xv == 0.0f) continue;
      const float* wk = w + k * out;
#pragma omp simd
      for (size_t j = 0; j < out; ++j) yb[j] += xv * wk[j];
    }
  }
}

void linearBackward(const float* x, const float* dy, size_t batch, size_t in, size_t out, const float* w, float* dw,
                    float* dbias, float* dx) {
  std::memset(dw, 0, in * out * sizeof(float));
  std::memset(dbias, 0, out * sizeof(float));
  for (size_t b = 0; b < batch; ++b) {
    const float* xb = x + b * in;
    const float* dyb = dy + b * out;
#pragma omp simd
    for (size_t j = 0; j < out; ++j) dbias[j] += dyb[j];
    for (size_t k = 0; k < in; ++k) {
      const float xv = xb[k];
      if (xv == 0.0f) continue;
      float* dwk = dw + k * out;
#pragma omp simd
      for (size_t j = 0; j < out; ++j) dwk[j] += xv * dyb[j];
    }
    if (dx == nullptr) continue;
    float* dxb = dx + b * in;
    for (size_t k = 0; k < in; ++k) {
      const float* wk = w + k * out;
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (size_t j = 0; j < out; ++j) acc += dyb[j] * wk[j];
      dxb[k] = acc;
    }
  }
}

void reluForward(float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = std::max(y[i], 0.0f);
}

void reluBackward(const float* y, float* dy, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (y[i] <= 0.0f) dy[i] = 0.0f;
  }
}

double softmaxCrossEntropy(const float* logits, const int32_t* labels, size_t batch, size_t classes, float* dlogits,
                           size_t* correct) {
  double loss = 0;
  size_t hits = 0;
  for (size_t b = 0; b < batch; ++b) {
    const float* l = logits + b * classes;
    size_t best = std::max_element(l, l + classes) - l;
    hits += best == static_cast<size_t>(labels[b]);
    float mx = l[best];
    double sum = 0;
    for (size_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(l[c] - mx));
    loss += std::log(sum) - (l[labels[b]] - mx);
    if (dlogits != nullptr) {
      float* d = dlogits + b * classes;
      for (size_t c = 0; c < classes; ++c) {
        double p = std::exp(static_cast<double>(l[c] - mx)) / sum;
        d[c] = static_cast<float>((p - (c == static_cast<size_t>(labels[b]) ? 1.0 : 0.0)) / batch);
      }
    }
  }
  if (correct != nullptr) *correct = hits;
  return batch > 0 ? loss / batch : 0.0;
}

std::vector<float> glorot(size_t in, size_t out, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const float limit = std::sqrt(6.0f / static_cast<float>(in + out));
  std::uniform_real_distribution<float> u(-limit, limit);
  std::vector<float> w(in * out);
  for (auto& v : w) v = u(rng);
  return w;
}

}  // namespace mlp
