// Factories of the optional network transports (UCX, ibverbs). Each is built only where its library exists; the
// fallback definitions in network_fallback.cpp say clearly that it is not available. The communicator creates the
// TCP mesh first in every case: it carries the address exchange and stays open as the liveness channel.
#pragma once

#include <atomic>
#include <memory>

#include "base/socket.hpp"
#include "transport/transport.hpp"

namespace tern {

class TcpTransport;

struct NetworkSetup {
  int rank = 0;
  int nranks = 1;
  TcpTransport* tcp = nullptr;  // connected to every peer: exchange addresses over it, watch it for peer death
  Clock::time_point deadline;
  const std::atomic<bool>* abortFlag = nullptr;
  int timeoutMs = 300000;
};

// TERN_TRANSPORT=ucx. Throws tern::Error(ternInvalidUsage, "...not available...") when built without UCX.
std::unique_ptr<Transport> createUcxTransport(const NetworkSetup& setup);
bool ucxAvailable();

// TERN_TRANSPORT=ibverbs. Throws tern::Error(ternInvalidUsage / ternSystemError) without rdma-core or devices.
std::unique_ptr<Transport> createIbverbsTransport(const NetworkSetup& setup);
bool ibverbsAvailable();

}  // namespace tern
