#include "dense_mlp.hpp"

#include <cstring>

#include "layers.hpp"

namespace mlp {

DenseMlp::DenseMlp(const Options& opt) : opt_(opt) {
  dims_.push_back(opt.task.features);
  for (int i = 0; i < opt.hiddenLayers; ++i) dims_.push_back(opt.hidden);
  dims_.push_back(opt.task.classes);
}

size_t DenseMlp::parameterCount() const {
  size_t n = 0;
  for (int l = 0; l < layers(); ++l) n += in(l)*out(l) + out(l);
  return n;
}

std::vector<float> DenseMlp::initialWeight(int l) const { return glorot(in(l), out(l), 1000 + l); }

double DenseMlp::run(ParamSource& p, const float* x, const int32_t* y, size_t b, size_t* correct, bool train) {
  const int L = layers();
  acts_.resize(L + 1);
  for (int l = 0; l < L; ++l) {
    acts_[l + 1].resize(b * out(l));
    const float* input = l == 0 ? x : acts_[l].data();
    p.beforeUse(l);
    linearForward(input, b, in(l), out(l), p.weight(l), p.bias(l), acts_[l + 1].data());
    if (l + 1 < L) reluForward(acts_[l + 1].data(), acts_[l + 1].size());
    emulateCompute(opt_);
    p.afterUse(l, false, train && l == L - 1);
  }
  grad_.resize(b * out(L - 1));
  double loss = softmaxCrossEntropy(acts_[L].data(), y, b, out(L - 1), train ? grad_.data() : nullptr, correct);
  if (!train) return loss;

  for (int l = L - 1; l >= 0; --l) {
    const float* input = l == 0 ? x : acts_[l].data();
    p.beforeUse(l);
    if (l > 0) gradNext_.resize(b * in(l));
    // The input layer's dx is never needed (and with a wide sparse input it would be the costliest product).
    linearBackward(input, grad_.data(), b, in(l), out(l), p.weight(l), p.weightGrad(l), p.biasGrad(l),
                   l > 0 ? gradNext_.data() : nullptr);
    emulateCompute(opt_);  // the layer's backward compute, before its gradients count as ready
    p.gradsReady(l);
    p.afterUse(l, true, false);
    if (l > 0) {
      reluBackward(acts_[l].data(), gradNext_.data(), gradNext_.size());
      grad_.swap(gradNext_);
    }
  }
  return loss;
}

}  // namespace mlp
