#include <chrono>
#include <stdexcept>
#include <thread>

#include "trainer.hpp"

namespace mlp {

void emulateCompute(const Options& opt) {
  if (opt.computeDelayMs > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(opt.computeDelayMs));
}

ternOptimizerConfig_t optimizerConfig(const Options& opt) {
  ternOptimizerKind_t kind = ternOptSgd;
  if (opt.optimizer == "adam") {
    kind = ternOptAdam;
  } else if (opt.optimizer == "adamw") {
    kind = ternOptAdamW;
  } else if (opt.optimizer != "sgd") {
    throw std::invalid_argument("--optimizer " + opt.optimizer + ": expected sgd, adam or adamw");
  }
  ternOptimizerConfig_t c;
  ternOptimizerConfigDefault(&c, kind);
  c.lr = static_cast<float>(opt.lr);
  c.momentum = static_cast<float>(opt.momentum);
  c.weightDecay = static_cast<float>(opt.weightDecay);
  return c;
}

}  // namespace mlp
