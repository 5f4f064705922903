// Element-wise optimizers. They act on fp32 values only: with ZeRO those are the master weights of this rank's
// shard, so every rank runs the same arithmetic on its slice and the result equals a replicated update.
#include <cmath>
#include <vector>

#include "common.hpp"

namespace tern::train {

struct Optimizer::Impl {
  ternOptimizerConfig_t config;
  size_t count;
  std::vector<float> first;   // SGD momentum buffer, or Adam's first moment
  std::vector<float> second;  // Adam's second moment
  int64_t t = 0;
};

Optimizer::Optimizer(const ternOptimizerConfig_t& config, size_t count) : impl_(std::make_unique<Impl>()) {
  if (config.kind != ternOptSgd && config.kind != ternOptAdam && config.kind != ternOptAdamW) {
    detail::fail(ternInvalidArgument, "optimizer kind %d: expected ternOptSgd, ternOptAdam or ternOptAdamW",
                 static_cast<int>(config.kind));
  }
  if (!(config.lr >= 0) || !(config.momentum >= 0) || !(config.beta1 >= 0 && config.beta1 < 1) ||
      !(config.beta2 >= 0 && config.beta2 < 1) || !(config.eps > 0 || config.kind == ternOptSgd)) {
    detail::fail(ternInvalidArgument, "optimizer: lr, momentum >= 0, 0 <= beta1, beta2 < 1 and eps > 0 required");
  }
  impl_->config = config;
  impl_->count = count;
  bool sgdWithMomentum = config.kind == ternOptSgd && config.momentum != 0.0f;
  if (config.kind != ternOptSgd || sgdWithMomentum) impl_->first.assign(count, 0.0f);
  if (config.kind != ternOptSgd) impl_->second.assign(count, 0.0f);
}

Optimizer::~Optimizer() = default;
Optimizer::Optimizer(Optimizer&&) noexcept = default;
Optimizer& Optimizer::operator=(Optimizer&&) noexcept = default;

void Optimizer::setLr(float lr) { impl_->config.lr = lr; }
size_t Optimizer::count() const { return impl_->count; }
size_t Optimizer::stateBytes() const { return (impl_->first.size() + impl_->second.size()) * sizeof(float); }

void Optimizer::step(float* p, const float* g) {
  Impl& s = *impl_;
  const ternOptimizerConfig_t& c = s.config;
  const size_t n = s.count;
  ++s.t;
  if (c.kind == ternOptSgd) {
    if (s.first.empty()) {
      for (size_t i = 0; i < n; ++i) p[i] -= c.lr * (g[i] + c.weightDecay * p[i]);
      return;
    }
    float* v = s.first.data();
    for (size_t i = 0; i < n; ++i) {
      v[i] = c.momentum * v[i] + g[i] + c.weightDecay * p[i];
      p[i] -= c.lr * v[i];
    }
    return;
  }
  // Adam / AdamW with bias correction folded into the step size (as torch.optim.Adam does).
  const double bc1 = 1.0 - std::pow(static_cast<double>(c.beta1), static_cast<double>(s.t));
  const double bc2 = 1.0 - std::pow(static_cast<double>(c.beta2), static_cast<double>(s.t));
  const float stepSize = static_cast<float>(c.lr / bc1);
  const float bc2Sqrt = static_cast<float>(std::sqrt(bc2));
  const bool decoupled = c.kind == ternOptAdamW;
  float* m = s.first.data();
  float* v = s.second.data();
  for (size_t i = 0; i < n; ++i) {
    float grad = g[i];
    if (decoupled) {
      p[i] -= c.lr * c.weightDecay * p[i];
    } else {
      grad += c.weightDecay * p[i];
    }
    m[i] = c.beta1 * m[i] + (1.0f - c.beta1) * grad;
    v[i] = c.beta2 * v[i] + (1.0f - c.beta2) * grad * grad;
    p[i] -= stepSize * m[i] / (std::sqrt(v[i]) / bc2Sqrt + c.eps);
  }
}

}  // namespace tern::train
