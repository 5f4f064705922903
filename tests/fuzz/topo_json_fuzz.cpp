// Topology files in tern's JSON form (TERN_TOPO_FILE, tern-topo): src/topo/topo_json_read.cpp.
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "topo/topo_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tern::topo::parseJobJson(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const tern::Error&) {
  }
  return 0;
}
