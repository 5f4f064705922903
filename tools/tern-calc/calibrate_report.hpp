// --calibrate: fits the cost model to perf JSON files and writes a calibration file (-o); --check: compares the
// model's predictions (with --tune / TERN_TUNE_FILE) to perf JSON files. Both print one row per measurement:
// size, measured and predicted time and busbw, and the error.
#pragma once

#include "options.hpp"

namespace tern::calc {

int runCalibrate(const Options& o);
int runCheck(const Options& o);

}  // namespace tern::calc
