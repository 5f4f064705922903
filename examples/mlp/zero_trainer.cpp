// --mode zero1|zero2|zero3: tern::train::Zero owns the parameters. The model asks it for each layer just before
// use; in stage 3 that is an all-gather (prefetched a layer ahead) and the layer is freed after use.
#include <cstdio>
#include <string>
#include <vector>

#include "dense_mlp.hpp"
#include "trainer.hpp"

namespace mlp {
namespace {

class ZeroTrainer : public Trainer, ParamSource {
 public:
  ZeroTrainer(ternComm_t comm, const Options& opt, int stage) : opt_(opt), model_(opt), stage_(stage) {
    ternZeroConfig_t cfg;
    ternZeroConfigDefault(&cfg);
    cfg.stage = stage;
    cfg.optimizer = optimizerConfig(opt);
    cfg.overlap = opt.overlap ? 1 : 0;
    if (opt.bucketMb > 0) cfg.bucketBytes = static_cast<size_t>(opt.bucketMb * 1024 * 1024);
    zero_ = std::make_unique<tern::train::Zero>(comm, &cfg);
    for (int l = 0; l < model_.layers(); ++l) {
      std::vector<float> w = model_.initialWeight(l);
      wi_.push_back(zero_->addParameter(l, w.size(), w.data()));
      bi_.push_back(zero_->addParameter(l, model_.out(l), nullptr));
    }
    zero_->finalize();
  }

  double trainStep(const float* x, const int32_t* y, size_t b, size_t* correct) override {
    double loss = model_.run(*this, x, y, b, correct, true);
    zero_->step();
    return loss;
  }

  double evaluate(const float* x, const int32_t* y, size_t b, size_t* correct) override {
    return model_.run(*this, x, y, b, correct, false);
  }

  void setLr(double lr) override { zero_->setLr(static_cast<float>(lr)); }
  double lastWaitSeconds() const override { return zero_->stats().lastWaitSeconds; }
  size_t parameterCount() const override { return model_.parameterCount(); }

  std::string report() const override {
    ternZeroMemory_t m = zero_->memory();
    char buf[300];
    std::snprintf(buf, sizeof(buf),
                  "zero%d memory per rank: params %.2f MB (peak %.2f), grads %.2f MB (peak %.2f), optimizer %.2f MB;"
                  " whole model %.2f MB fp32",
                  stage_, m.paramBytes / 1e6, m.paramPeakBytes / 1e6, m.gradBytes / 1e6, m.gradPeakBytes / 1e6,
                  m.optimizerBytes / 1e6, m.modelElements * 4 / 1e6);
    return buf;
  }

  // ParamSource
  void beforeUse(int l) override { zero_->gather(l); }
  void afterUse(int l, bool, bool keepForBackward) override {
    if (!keepForBackward) zero_->release(l);
  }
  const float* weight(int l) override { return static_cast<const float*>(zero_->param(wi_[l])); }
  const float* bias(int l) override { return static_cast<const float*>(zero_->param(bi_[l])); }
  float* weightGrad(int l) override { return static_cast<float*>(zero_->grad(wi_[l])); }
  float* biasGrad(int l) override { return static_cast<float*>(zero_->grad(bi_[l])); }
  void gradsReady(int l) override {
    zero_->gradReady(bi_[l]);
    zero_->gradReady(wi_[l]);
  }

 private:
  const Options& opt_;
  DenseMlp model_;
  int stage_;
  std::unique_ptr<tern::train::Zero> zero_;
  std::vector<int> wi_, bi_;
};

}  // namespace

std::unique_ptr<Trainer> makeZeroTrainer(ternComm_t comm, const Options& opt, int stage) {
  return std::make_unique<ZeroTrainer>(comm, opt, stage);
}

}  // namespace mlp
