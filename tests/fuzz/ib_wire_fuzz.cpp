// The ibverbs connection record (src/transport/ibverbs/ib_wire.hpp) a peer sends over the TCP mesh: a decoded
// record re-encodes to a record that decodes to the same fields.
#include <cstdint>

#include "base/error.hpp"
#include "transport/ibverbs/ib_wire.hpp"

using namespace tern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ib::QpAddress a = ib::decodeQpAddress(data, size, 1);
    const auto again = ib::encodeQpAddress(a);
    if (!(ib::decodeQpAddress(again.data(), again.size(), 1) == a)) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
