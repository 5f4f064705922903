// Cost model of the shared-memory algorithms, in the planner's alpha-beta form. Its parameters are the planner's
// (planner::ShmAlgorithmCost in CostParams; "shm_algorithms" in a tune file), so one cost model prices every entry
// of the catalogue.
#pragma once

#include "exec/collective.hpp"

namespace tern::planner {
struct ShmAlgorithmCost;
}  // namespace tern::planner

namespace tern::shm {

// Predicted seconds of a shared-memory algorithm for args on nranks ranks of this host (small: the one-phase one;
// otherwise the chunked ones, CMA and mapped included: the staged model is the conservative one for all of them).
// All-to-all: small is the inline form; the others move every block for a peer once.
double predictDirectSeconds(const CollArgs& args, int nranks, bool small, const planner::ShmAlgorithmCost& cost);

}  // namespace tern::shm
