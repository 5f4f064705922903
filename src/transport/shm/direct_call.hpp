// The direct collectives' per-call state moved to src/algorithms/shm (issue 16: the shared-memory algorithms are
// catalogue entries). small_collective.cpp and reduce_in_order.cpp, which still live here, reach it through this
// header until they move too.
#pragma once

#include "algorithms/shm/direct_call.hpp"
