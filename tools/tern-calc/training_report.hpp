// Training mode (--model-params): gradient bytes, the allreduce per step and its share of the step, the naive
// bytes / link-speed figure and why the real allreduce differs from it, scaling over 1..N nodes, and what
// fp16/bf16 gradients or a compression codec would save (codec cost included). With --gpu-hour-price, costs.
#pragma once

#include "options.hpp"
#include "setup.hpp"

namespace tern::calc {

int runTrainingReport(const Options& o, const Setup& s);

}  // namespace tern::calc
