// Tune (calibration) files, TERN_TUNE_FILE: src/planner/calibration.cpp, read from a file like the library does.
#include <cstdint>

#include "base/error.hpp"
#include "fuzz_util.hpp"
#include "planner/calibration.hpp"
#include "planner/cost_params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tern::fuzz::MemFile file(data, size);
  tern::planner::CostParams params;
  try {
    tern::planner::applyCalibrationFile(file.path(), params);
  } catch (const tern::Error&) {
  }
  return 0;
}
