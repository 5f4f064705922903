// The real ibverbs factory (replaces the stand-in in network_fallback.cpp when TERN_HAVE_IBVERBS is defined).
#include "transport/ibverbs/ib_device.hpp"
#include "transport/ibverbs/ibverbs_transport.hpp"
#include "transport/network_factory.hpp"

namespace tern {

std::unique_ptr<Transport> createIbverbsTransport(const NetworkSetup& setup) { return IbverbsTransport::create(setup); }

bool ibverbsAvailable() {
  for (const ib::PortInfo& p : ib::enumeratePorts()) {
    if (p.active) return true;
  }
  return false;
}

}  // namespace tern
