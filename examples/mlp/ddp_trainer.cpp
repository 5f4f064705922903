// --mode ddp: every rank holds the whole model; tern::train::Ddp averages gradients bucket by bucket while backward
// runs, then each rank applies the same optimizer step.
#include <cstdio>
#include <string>
#include <vector>

#include "dense_mlp.hpp"
#include "trainer.hpp"

namespace mlp {
namespace {

ternDataType_t wireType(const std::string& name) {
  if (name == "fp32") return ternFloat32;
  if (name == "fp16") return ternFloat16;
  if (name == "bf16") return ternBfloat16;
  throw std::invalid_argument("--wire " + name + ": expected fp32, fp16 or bf16");
}

class DdpTrainer : public Trainer, ParamSource {
 public:
  DdpTrainer(ternComm_t comm, const Options& opt) : opt_(opt), model_(opt) {
    ternDdpConfig_t cfg;
    ternDdpConfigDefault(&cfg);
    cfg.compress = opt.compress.empty() ? nullptr : opt.compress.c_str();
    cfg.overlap = opt.overlap ? 1 : 0;
    cfg.wireDtype = wireType(opt.wire);
    cfg.accumulationSteps = opt.accumulate;
    if (opt.bucketMb > 0) cfg.bucketBytes = static_cast<size_t>(opt.bucketMb * 1024 * 1024);
    ddp_ = std::make_unique<tern::train::Ddp>(comm, &cfg);
    const int L = model_.layers();
    w_.resize(L), b_.resize(L), dw_.resize(L), db_.resize(L), wi_.resize(L), bi_.resize(L);
    ternOptimizerConfig_t oc = optimizerConfig(opt);
    for (int l = 0; l < L; ++l) {
      w_[l] = model_.initialWeight(l);
      b_[l].assign(model_.out(l), 0.0f);
      dw_[l].assign(w_[l].size(), 0.0f);
      db_[l].assign(b_[l].size(), 0.0f);
      // Forward order; Ddp buckets them in reverse, the order backward reports them in.
      wi_[l] = ddp_->addParameter(w_[l].data(), dw_[l].data(), w_[l].size());
      bi_[l] = ddp_->addParameter(b_[l].data(), db_[l].data(), b_[l].size());
      opts_.emplace_back(oc, w_[l].size());
      opts_.emplace_back(oc, b_[l].size());
    }
    ddp_->finalize();
  }

  double trainStep(const float* x, const int32_t* y, size_t b, size_t* correct) override {
    double loss = model_.run(*this, x, y, b, correct, true);
    if (ddp_->finish()) {
      for (int l = 0; l < model_.layers(); ++l) {
        opts_[2 * l].step(w_[l].data(), dw_[l].data());
        opts_[2 * l + 1].step(b_[l].data(), db_[l].data());
      }
    }
    return loss;
  }

  double evaluate(const float* x, const int32_t* y, size_t b, size_t* correct) override {
    return model_.run(*this, x, y, b, correct, false);
  }

  void setLr(double lr) override {
    for (auto& o : opts_) o.setLr(static_cast<float>(lr));
  }
  double lastWaitSeconds() const override { return ddp_->stats().lastWaitSeconds; }
  size_t parameterCount() const override { return model_.parameterCount(); }

  std::string report() const override {
    ternDdpStats_t s = ddp_->stats();
    char buf[200];
    std::snprintf(buf, sizeof(buf), "ddp: %d buckets, %.1f MB of fp32 gradients per step, %d launched during backward",
                  s.buckets, s.gradientBytes / 1e6, s.bucketsLaunchedEarly);
    return buf;
  }

  // ParamSource
  const float* weight(int l) override { return w_[l].data(); }
  const float* bias(int l) override { return b_[l].data(); }
  float* weightGrad(int l) override { return dw_[l].data(); }
  float* biasGrad(int l) override { return db_[l].data(); }
  void gradsReady(int l) override {
    ddp_->gradReady(bi_[l]);
    ddp_->gradReady(wi_[l]);
  }

 private:
  const Options& opt_;
  DenseMlp model_;
  std::unique_ptr<tern::train::Ddp> ddp_;
  std::vector<std::vector<float>> w_, b_, dw_, db_;
  std::vector<int> wi_, bi_;
  std::vector<tern::train::Optimizer> opts_;
};

}  // namespace

std::unique_ptr<Trainer> makeDdpTrainer(ternComm_t comm, const Options& opt) {
  return std::make_unique<DdpTrainer>(comm, opt);
}

}  // namespace mlp
