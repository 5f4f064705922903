// --mode moe: features -> dense (ReLU) -> mixture of experts (top-1 softmax gate, each expert dense + ReLU, with a
// residual connection) -> dense -> classes. Dense layers and the gate are replicated and synchronised by Ddp;
// experts are sharded (expert parallelism): each rank owns numExperts / ranks of them, receives their tokens from
// every rank through tern::train::Moe, and updates them locally.
//
// The MoE exchanges run on a communicator of their own (ternCommSplit), so they do not queue behind the gradient
// buckets Ddp has in flight on the main one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "layers.hpp"
#include "trainer.hpp"

namespace mlp {
namespace {

constexpr float kAuxLossWeight = 0.01f;  // Switch Transformer's load-balancing loss weight

class MoeTrainer : public Trainer {
 public:
  MoeTrainer(ternComm_t comm, const Options& opt) : opt_(opt) {
    ternCommCount(comm, &nranks_);
    ternCommUserRank(comm, &rank_);
    if (ternCommSplit(comm, 0, rank_, &moeComm_, nullptr) != ternSuccess) {
      throw std::runtime_error(std::string("ternCommSplit: ") + ternGetLastError(comm));
    }
    E_ = opt.experts > 0 ? opt.experts : 2 * nranks_;
    H_ = opt.hidden;
    D_ = opt.task.features;
    C_ = opt.task.classes;
    ternMoeConfig_t mc;
    ternMoeConfigDefault(&mc);
    mc.numExperts = E_;
    mc.topK = 1;
    mc.capacityFactor = static_cast<float>(opt.capacity);
    mc.hidden = H_;
    moe_ = std::make_unique<tern::train::Moe>(moeComm_, mc);

    ternDdpConfig_t dc;
    ternDdpConfigDefault(&dc);
    dc.compress = opt.compress.empty() ? nullptr : opt.compress.c_str();
    dc.overlap = opt.overlap ? 1 : 0;
    ddp_ = std::make_unique<tern::train::Ddp>(comm, &dc);
    ternOptimizerConfig_t oc = optimizerConfig(opt);
    // Dense tensors in forward order: input layer, gate, output layer.
    addDense(D_, H_, 1000);
    addDense(H_, static_cast<size_t>(E_), 2000);
    addDense(H_, C_, 3000);
    for (auto& t : dense_) opts_.emplace_back(oc, t.value.size());
    ddp_->finalize();
    // Local experts, initialised from their global id so any rank layout gives the same model.
    for (int j = 0; j < moe_->localExperts(); ++j) {
      Expert e;
      e.w = glorot(H_, H_, 5000 + moe_->firstExpert() + j);
      e.b.assign(H_, 0.0f);
      e.dw.assign(e.w.size(), 0.0f);
      e.db.assign(H_, 0.0f);
      e.ow = std::make_unique<tern::train::Optimizer>(oc, e.w.size());
      e.ob = std::make_unique<tern::train::Optimizer>(oc, e.b.size());
      experts_.push_back(std::move(e));
    }
  }

  ~MoeTrainer() override {
    moe_.reset();
    if (moeComm_ != nullptr) ternCommDestroy(moeComm_);
  }

  double trainStep(const float* x, const int32_t* y, size_t b, size_t* correct) override {
    return run(x, y, b, correct, true);
  }
  double evaluate(const float* x, const int32_t* y, size_t b, size_t* correct) override {
    return run(x, y, b, correct, false);
  }
  void setLr(double lr) override {
    for (auto& o : opts_) o.setLr(static_cast<float>(lr));
    for (auto& e : experts_) {
      e.ow->setLr(static_cast<float>(lr));
      e.ob->setLr(static_cast<float>(lr));
    }
  }
  double lastWaitSeconds() const override { return ddp_->stats().lastWaitSeconds; }
  size_t parameterCount() const override {
    size_t n = static_cast<size_t>(E_) * (H_ * H_ + H_);
    for (const auto& t : dense_) n += t.value.size();
    return n;
  }
  std::string report() const override {
    ternMoeStats_t s = moe_->stats();
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "moe: %d experts (%d per rank), capacity factor %.2f, dropped %.2f%% of %llu"
                  " token assignments on rank %d",
                  E_, moe_->localExperts(), opt_.capacity,
                  s.totalAssignments ? 100.0 * s.totalDropped / s.totalAssignments : 0.0,
                  static_cast<unsigned long long>(s.totalAssignments), rank_);
    return buf;
  }

 private:
  struct Tensor {
    std::vector<float> value, grad;
    int index;
  };
  struct Expert {
    std::vector<float> w, b, dw, db, in, z;
    std::unique_ptr<tern::train::Optimizer> ow, ob;
  };

  void addDense(size_t in, size_t out, uint64_t seed) {
    Tensor w{glorot(in, out, seed), std::vector<float>(in * out), -1};
    Tensor b{std::vector<float>(out, 0.0f), std::vector<float>(out), -1};
    dense_.push_back(std::move(w));
    dense_.push_back(std::move(b));
    for (size_t i = dense_.size() - 2; i < dense_.size(); ++i) {
      dense_[i].index = ddp_->addParameter(dense_[i].value.data(), dense_[i].grad.data(), dense_[i].value.size());
    }
  }
  Tensor& W(int layer) { return dense_[2 * layer]; }
  Tensor& B(int layer) { return dense_[2 * layer + 1]; }
  void ready(int layer) {
    ddp_->gradReady(B(layer).index);
    ddp_->gradReady(W(layer).index);
  }

  double run(const float* x, const int32_t* y, size_t b, size_t* correct, bool train) {
    // Forward.
    h1_.resize(b * H_);
    linearForward(x, b, D_, H_, W(0).value.data(), B(0).value.data(), h1_.data());
    reluForward(h1_.data(), h1_.size());
    emulateCompute(opt_);
    gateLogits_.resize(b * E_);
    linearForward(h1_.data(), b, H_, E_, W(1).value.data(), B(1).value.data(), gateLogits_.data());
    probs_.resize(b * E_);
    ids_.resize(b);
    gates_.resize(b);
    for (size_t t = 0; t < b; ++t) {
      const float* l = &gateLogits_[t * E_];
      float* p = &probs_[t * E_];
      float mx = *std::max_element(l, l + E_);
      float sum = 0;
      for (int e = 0; e < E_; ++e) sum += p[e] = std::exp(l[e] - mx);
      for (int e = 0; e < E_; ++e) p[e] /= sum;
      ids_[t] = static_cast<int>(std::max_element(p, p + E_) - p);
      gates_[t] = p[ids_[t]];
    }
    moe_->dispatch(h1_.data(), b, ids_.data(), gates_.data());
    for (int j = 0; j < moe_->localExperts(); ++j) {
      Expert& e = experts_[j];
      size_t n = moe_->expertTokens(j);
      e.in.assign(moe_->expertInput(j), moe_->expertInput(j) + n * H_);
      e.z.resize(n * H_);
      linearForward(e.in.data(), n, H_, H_, e.w.data(), e.b.data(), e.z.data());
      reluForward(e.z.data(), e.z.size());
      std::copy(e.z.begin(), e.z.end(), moe_->expertOutput(j));
    }
    emulateCompute(opt_);
    h2_.resize(b * H_);
    moe_->combine(h2_.data());
    for (size_t i = 0; i < h2_.size(); ++i) h2_[i] += h1_[i];  // residual: dropped tokens still pass through
    logits_.resize(b * C_);
    linearForward(h2_.data(), b, H_, C_, W(2).value.data(), B(2).value.data(), logits_.data());
    emulateCompute(opt_);
    dlogits_.resize(b * C_);
    double loss = softmaxCrossEntropy(logits_.data(), y, b, C_, train ? dlogits_.data() : nullptr, correct);
    if (!train) return loss;

    // Backward, output layer first.
    dh2_.resize(b * H_);
    linearBackward(h2_.data(), dlogits_.data(), b, H_, C_, W(2).value.data(), W(2).grad.data(), B(2).grad.data(),
                   dh2_.data());
    emulateCompute(opt_);
    ready(2);
    dgates_.resize(b);
    moe_->combineBackward(dh2_.data(), dgates_.data());
    for (int j = 0; j < moe_->localExperts(); ++j) {
      Expert& e = experts_[j];
      size_t n = moe_->expertTokens(j);
      std::vector<float> dz(moe_->expertGradOutput(j), moe_->expertGradOutput(j) + n * H_);
      reluBackward(e.z.data(), dz.data(), dz.size());
      linearBackward(e.in.data(), dz.data(), n, H_, H_, e.w.data(), e.dw.data(), e.db.data(), moe_->expertGradInput(j));
    }
    dh1_.resize(b * H_);
    moe_->dispatchBackward(dh1_.data());
    emulateCompute(opt_);
    // Gate: d loss / d logits through the chosen expert's probability, plus the load-balancing loss
    // aux = w * E * sum_e f_e * P_e (f_e: fraction of tokens sent to e, P_e: mean probability of e).
    std::vector<float> frac(E_, 0.0f), dlg(b * E_);
    for (size_t t = 0; t < b; ++t) frac[ids_[t]] += 1.0f / b;
    for (size_t t = 0; t < b; ++t) {
      const float* p = &probs_[t * E_];
      float* d = &dlg[t * E_];
      int c = ids_[t];
      float mix = 0;
      for (int e = 0; e < E_; ++e) mix += kAuxLossWeight * E_ * frac[e] / b * p[e];
      for (int e = 0; e < E_; ++e) {
        float aux = p[e] * (kAuxLossWeight * E_ * frac[e] / b - mix);
        d[e] = dgates_[t] * p[c] * ((e == c ? 1.0f : 0.0f) - p[e]) + aux;
      }
    }
    std::vector<float> dh1Gate(b * H_);
    linearBackward(h1_.data(), dlg.data(), b, H_, E_, W(1).value.data(), W(1).grad.data(), B(1).grad.data(),
                   dh1Gate.data());
    ready(1);
    for (size_t i = 0; i < dh1_.size(); ++i) dh1_[i] += dh2_[i] + dh1Gate[i];
    reluBackward(h1_.data(), dh1_.data(), dh1_.size());
    linearBackward(x, dh1_.data(), b, D_, H_, W(0).value.data(), W(0).grad.data(), B(0).grad.data(), nullptr);
    emulateCompute(opt_);
    ready(0);

    if (ddp_->finish()) {
      for (size_t i = 0; i < dense_.size(); ++i) opts_[i].step(dense_[i].value.data(), dense_[i].grad.data());
    }
    // Expert gradients already sum every rank's tokens, each rank's loss being a mean over its own batch: divide
    // by the rank count to get the gradient of the global mean loss, as Ddp's average does for dense tensors.
    const float inv = 1.0f / nranks_;
    for (auto& e : experts_) {
      for (auto& v : e.dw) v *= inv;
      for (auto& v : e.db) v *= inv;
      e.ow->step(e.w.data(), e.dw.data());
      e.ob->step(e.b.data(), e.db.data());
    }
    return loss;
  }

  const Options& opt_;
  int nranks_ = 1, rank_ = 0, E_ = 2;
  size_t H_, D_, C_;
  ternComm_t moeComm_ = nullptr;
  std::unique_ptr<tern::train::Moe> moe_;
  std::unique_ptr<tern::train::Ddp> ddp_;
  std::vector<Tensor> dense_;
  std::vector<tern::train::Optimizer> opts_;
  std::vector<Expert> experts_;
  std::vector<float> h1_, gateLogits_, probs_, gates_, h2_, logits_, dlogits_, dh2_, dgates_, dh1_;
  std::vector<int> ids_;
};

}  // namespace

std::unique_ptr<Trainer> makeMoeTrainer(ternComm_t comm, const Options& opt) {
  return std::make_unique<MoeTrainer>(comm, opt);
}

}  // namespace mlp
