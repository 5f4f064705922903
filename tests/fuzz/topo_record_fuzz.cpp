// The per-rank topology records every rank allgathers at communicator init (src/topo/assemble.cpp), and the older
// self-contained reports: text from another process.
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "topo/assemble.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] & 1) {
      tern::topo::decodeRankRecord(text, 3);
    } else {
      tern::topo::decodeRankReport(text, 3);
    }
  } catch (const tern::Error&) {
  }
  return 0;
}
