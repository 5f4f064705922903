// Forward/backward of the plain MLP (features -> hidden (ReLU) x hiddenLayers -> classes) over parameters that
// live wherever a ParamSource keeps them, so that DDP (caller-owned tensors) and ZeRO (library-owned, gathered on
// demand) share one model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer.hpp"

namespace mlp {

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  virtual void beforeUse(int layer) { (void)layer; }
  // backward: whether this was the backward use. keepForBackward: forward use of the last layer in a training
  // step, which backward needs again at once.
  virtual void afterUse(int layer, bool backward, bool keepForBackward) {
    (void)layer, (void)backward, (void)keepForBackward;
  }
  virtual const float* weight(int layer) = 0;
  virtual const float* bias(int layer) = 0;
  virtual float* weightGrad(int layer) = 0;
  virtual float* biasGrad(int layer) = 0;
  virtual void gradsReady(int layer) = 0;
};

class DenseMlp {
 public:
  explicit DenseMlp(const Options& opt);
  int layers() const { return static_cast<int>(dims_.size()) - 1; }
  size_t in(int l) const { return dims_[l]; }
  size_t out(int l) const { return dims_[l + 1]; }
  size_t parameterCount() const;
  // Glorot weights, zero biases; the same on every rank.
  std::vector<float> initialWeight(int l) const;

  // Forward (+ backward when train): returns the mean loss and counts correct predictions.
  double run(ParamSource& params, const float* x, const int32_t* y, size_t b, size_t* correct, bool train);

 private:
  const Options& opt_;
  std::vector<size_t> dims_;
  std::vector<std::vector<float>> acts_;  // acts_[l] is the input of layer l; acts_[layers] the logits
  std::vector<float> grad_, gradNext_;
};

}  // namespace mlp
