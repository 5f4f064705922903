// Perf output files (JSON from the perf binaries) read back by tern-calc fit: src/planner/perf_records.cpp.
#include <cstdint>

#include "base/error.hpp"
#include "fuzz_util.hpp"
#include "planner/perf_records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tern::fuzz::MemFile file(data, size);
  try {
    tern::planner::loadPerfRun(file.path());
  } catch (const tern::Error&) {
  }
  return 0;
}
