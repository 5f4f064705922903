// Size mode: every candidate algorithm's predicted time, algbw, busbw and bottleneck for the given sizes (or a
// sweep), the selected one, the crossover sizes where the selection changes, and the closed forms that explain
// the numbers. Text or --json.
#pragma once

#include "options.hpp"
#include "setup.hpp"

namespace tern::calc {

int runSizeReport(const Options& o, const Setup& s);

}  // namespace tern::calc
