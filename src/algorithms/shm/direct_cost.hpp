// Cost model of the shared-memory algorithms, in the planner's alpha-beta form. Its parameters are part of the
// planner's (CostParams::shmAlgorithms; "shm_algorithms" in a tune file), so one cost model prices every entry of
// the catalogue; they are declared here, below the planner, because the catalogue's entries price themselves.
#pragma once

#include "exec/collective.hpp"

namespace tern::shm {

// The shared-memory algorithms' own model (direct_cost.cpp), used where no "shm_direct" figure is calibrated: the
// one-phase algorithm costs smallAlpha + (bytes every rank folds or copies) / smallBytesPerSecond; the chunked ones
// (pipelined, CMA, mapped) pipelinedAlpha + bus bytes / pipelinedBusBytesPerSecond. The defaults were fitted to
// all_reduce_perf on a small VM (docs/PERFORMANCE.md); a tune file's "shm_algorithms" refines them.
struct ShmAlgorithmCost {
  double smallAlpha = 1.5e-6;
  double smallBytesPerSecond = 9.0e9;  // every rank folds every rank's data, in cache
  double pipelinedAlpha = 10.0e-6;     // descriptor exchange and pipeline fill
  double pipelinedBusBytesPerSecond = 3.5e9;

  bool operator==(const ShmAlgorithmCost&) const = default;
};

// Predicted seconds of a shared-memory algorithm for args on nranks ranks of this host (small: the one-phase one;
// otherwise the chunked ones, CMA and mapped included: the staged model is the conservative one for all of them).
// All-to-all: small is the inline form; the others move every block for a peer once.
double predictDirectSeconds(const CollArgs& args, int nranks, bool small, const ShmAlgorithmCost& cost);

}  // namespace tern::shm
