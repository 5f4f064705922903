// Stand-ins for transports this build does not have (their real definitions live under src/transport/ucx and
// src/transport/ibverbs and define TERN_HAVE_UCX / TERN_HAVE_IBVERBS).
#include "base/error.hpp"
#include "transport/network_factory.hpp"

namespace tern {

#ifndef TERN_HAVE_UCX
std::unique_ptr<Transport> createUcxTransport(const NetworkSetup&) {
  throwError(ternInvalidUsage,
             "TERN_TRANSPORT=ucx: this build of tern has no UCX support (install libucx-dev and rebuild)");
}
bool ucxAvailable() { return false; }
#endif

#ifndef TERN_HAVE_IBVERBS
std::unique_ptr<Transport> createIbverbsTransport(const NetworkSetup&) {
  throwError(ternInvalidUsage,
             "TERN_TRANSPORT=ibverbs: this build of tern has no ibverbs support (install libibverbs-dev and rebuild)");
}
bool ibverbsAvailable() { return false; }
#endif

}  // namespace tern
