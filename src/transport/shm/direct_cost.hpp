// Cost model of the direct shared-memory collectives, in the planner's alpha-beta form.
#pragma once

#include "algorithms/collective.hpp"

namespace tern::shm {

// Predicted seconds of the direct algorithm for args on nranks ranks of this host (small: the one-phase variant).
double predictDirectSeconds(const CollArgs& args, int nranks, bool small);

}  // namespace tern::shm
