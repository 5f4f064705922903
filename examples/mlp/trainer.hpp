// What train_mlp's modes have in common: a Trainer runs one step (forward, backward, gradient synchronisation,
// optimizer) or an evaluation on a local batch, and says how long it waited for communication.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dataset.hpp"
#include "tern/train.h"

namespace mlp {

struct Options {
  std::string mode = "ddp";   // ddp | zero1 | zero2 | zero3 | moe
  std::string compress;       // codec spec (DDP and MoE's dense part)
  std::string wire = "fp32";  // fp32 | fp16 | bf16 (DDP)
  bool overlap = true;
  size_t hidden = 512;
  int hiddenLayers = 2;
  double lr = 0.05;
  std::string schedule = "linear";  // linear (decay to 0 over the run) | constant
  double momentum = 0.9;
  double weightDecay = 5e-3;
  std::string optimizer = "sgd";  // sgd | adam | adamw
  double computeDelayMs = 0;      // artificial compute per layer and pass
  double bucketMb = 0;            // 0: the library's default
  int accumulate = 1;             // DDP micro-steps per synchronisation
  int experts = 0;                // MoE: 0 means 2 per rank
  double capacity = 1.25;         // MoE capacity factor
  TaskSpec task;
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  // One optimisation step on a local batch x (b x features, dense), labels y. Returns the mean loss; *correct
  // receives the number of correct predictions.
  virtual double trainStep(const float* x, const int32_t* y, size_t b, size_t* correct) = 0;
  // Forward only. Collective in modes that communicate in forward (zero3, moe).
  virtual double evaluate(const float* x, const int32_t* y, size_t b, size_t* correct) = 0;
  // Learning rate for the next steps (the schedule lives in train_mlp.cpp).
  virtual void setLr(double lr) = 0;
  // Seconds the last trainStep spent waiting for communication it could not hide.
  virtual double lastWaitSeconds() const = 0;
  virtual size_t parameterCount() const = 0;
  // One line about the parallel setup (buckets, memory, drops), printed after training.
  virtual std::string report() const = 0;
};

std::unique_ptr<Trainer> makeDdpTrainer(ternComm_t comm, const Options& opt);
std::unique_ptr<Trainer> makeZeroTrainer(ternComm_t comm, const Options& opt, int stage);
std::unique_ptr<Trainer> makeMoeTrainer(ternComm_t comm, const Options& opt);

// Sleeps opt.computeDelayMs: the stand-in for a bigger model's per-layer compute (a sleep, like a GPU kernel,
// leaves the CPU to communication).
void emulateCompute(const Options& opt);

// The optimizer settings the options describe.
ternOptimizerConfig_t optimizerConfig(const Options& opt);

}  // namespace mlp
