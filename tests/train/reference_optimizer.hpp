// The optimizers of include/tern/train.h written out from their documented formulas, for tests to compare the
// library's fp32 optimizer (and ZeRO's sharded use of it) against. Nothing here calls the library.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "tern/train.h"

namespace tern::train::testing {

// SGD, Adam and AdamW as include/tern/train.h documents them, on double master weights and state: the exact
// update (up to double rounding) that the library's fp32 optimizer approximates.
//   SGD:   v = momentum*v + g + wd*p;  p -= lr*v        (no buffer with momentum 0: p -= lr*(g + wd*p), the same)
//   Adam:  g += wd*p (L2);  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;  p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) +
//   eps) AdamW: p -= lr*wd*p first, then the Adam step on the undecayed gradient.
class ReferenceOptimizer {
 public:
  ReferenceOptimizer(const ternOptimizerConfig_t& config, const std::vector<float>& init)
      : c_(config), p_(init.begin(), init.end()), m_(init.size(), 0.0), v_(init.size(), 0.0) {}

  void step(const std::vector<double>& g) {
    ++t_;
    const double lr = c_.lr, wd = c_.weightDecay, b1 = c_.beta1, b2 = c_.beta2, eps = c_.eps;
    for (size_t i = 0; i < p_.size(); ++i) {
      if (c_.kind == ternOptSgd) {
        m_[i] = double(c_.momentum) * m_[i] + g[i] + wd * p_[i];
        p_[i] -= lr * m_[i];
        continue;
      }
      double grad = g[i];
      if (c_.kind == ternOptAdamW) {
        p_[i] -= lr * wd * p_[i];
      } else {
        grad += wd * p_[i];
      }
      m_[i] = b1 * m_[i] + (1 - b1) * grad;
      v_[i] = b2 * v_[i] + (1 - b2) * grad * grad;
      const double mHat = m_[i] / (1 - std::pow(b1, double(t_)));
      const double vHat = v_[i] / (1 - std::pow(b2, double(t_)));
      p_[i] -= lr * mHat / (std::sqrt(vHat) + eps);
    }
  }

  void setLr(float lr) { c_.lr = lr; }

  // The parameters as the model (and the library) hold them: rounded to fp32.
  void store(std::vector<float>& out) const {
    out.resize(p_.size());
    for (size_t i = 0; i < p_.size(); ++i) out[i] = static_cast<float>(p_[i]);
  }

 private:
  ternOptimizerConfig_t c_;
  std::vector<double> p_, m_, v_;
  int64_t t_ = 0;
};

}  // namespace tern::train::testing
