// hwloc XML exports read as a host's topology (TERN_TOPO_FILE, tern-topo): src/topo/detect_hwloc.cpp through hwloc.
#include <cstdint>

#include "core/error.hpp"
#include "fuzz_util.hpp"
#include "topo/detect.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tern::fuzz::MemFile file(data, size);
  try {
    tern::topo::loadHwlocXml(file.path());
  } catch (const tern::Error&) {
  }
  return 0;
}
