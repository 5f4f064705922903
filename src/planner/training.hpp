// Data-parallel training arithmetic for tern-calc's training mode: how long the gradient allreduce of a step takes,
// how much of the step it is, how it scales with nodes, and what compression would save.
//
// Model: every step computes for computeSeconds and allreduces the gradients (params x bytes per element). A
// fraction `overlap` of the allreduce can run hidden behind the backward pass (DDP buckets), but no more than the
// compute time: exposed = comm - min(overlap x comm, compute); step = compute + exposed. Scaling is weak (the
// batch per GPU is fixed): efficiency = compute / step, speedup = ranks x efficiency over one GPU.
#pragma once

#include <string>
#include <vector>

#include "planner/planner.hpp"

namespace tern::planner {

struct TrainingInputs {
  double params = 0;               // number of gradient elements
  double gradBytesPerElement = 4;  // 4 fp32, 2 fp16/bf16
  double computeSeconds = 0;
  double overlap = 0;     // 0..1
  std::string algorithm;  // "" = the planner's choice
};

struct StepTime {
  std::string algorithm;
  double commSeconds = 0;     // the allreduce
  double exposedSeconds = 0;  // what is left after overlap
  double stepSeconds = 0;
  double commFraction = 0;  // exposed / step
  double efficiency = 1;    // compute / step
  double speedup = 1;       // ranks x efficiency
  Estimate estimate;
};

double gradientBytes(const TrainingInputs& in);
// Step arithmetic for a known allreduce time.
StepTime stepFor(double commSeconds, const TrainingInputs& in, int ranks);
// The allreduce priced by the planner (in.algorithm, or the cheapest).
StepTime stepTime(const Planner& planner, const TrainingInputs& in);
// With a codec: the compressed allreduce of the fp32 gradients.
StepTime compressedStepTime(const Planner& planner, const TrainingInputs& in, const std::string& codecSpec);

// The first `hosts` hosts of a job, with their ranks (for scaling tables over 1..N nodes).
topo::JobTopology firstHosts(const topo::JobTopology& job, int hosts);

}  // namespace tern::planner
