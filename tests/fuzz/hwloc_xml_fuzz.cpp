// hwloc XML exports read as a host's topology (TERN_TOPO_FILE, tern-topo): src/topo/detect_hwloc.cpp through hwloc.
// hwloc's own crashes on malformed files are part of what this checks: the library imports in a child first and
// must refuse such a file with an Error, never crash (detect.hpp).
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "topo/detect.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tern::topo::parseHwlocXml(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.xml");
  } catch (const tern::Error&) {
  }
  return 0;
}
