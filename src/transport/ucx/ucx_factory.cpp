// The real UCX factory (replaces the stand-in in network_fallback.cpp when TERN_HAVE_UCX is defined).
#include "transport/network_factory.hpp"
#include "transport/ucx/ucx_transport.hpp"

namespace tern {

std::unique_ptr<Transport> createUcxTransport(const NetworkSetup& setup) { return UcxTransport::create(setup); }

bool ucxAvailable() { return true; }

}  // namespace tern
