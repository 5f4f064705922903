// NCCL topology XML files (NCCL_TOPO_FILE form, read by TERN_TOPO_FILE and tern-topo): src/topo/nccl_xml.cpp.
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "topo/nccl_xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tern::topo::parseNcclXml(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const tern::Error&) {
  }
  return 0;
}
