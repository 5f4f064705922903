// Connecting a communicator's UCX workers: worker addresses travel over the TCP mesh (which every rank already
// has), then each rank creates one endpoint per peer.
//
// Endpoints use peer error handling where the transports allow it, so a peer that dies or a network that fails
// makes UCX call the error handler (and fail that endpoint's requests) instead of retrying forever. Some transports
// cannot detect a dead peer (UCX 1.13's shared-memory ones: UCX_TLS=sm has no endpoint in that mode); the endpoint
// then runs without UCX error handling, and the transport still notices a dead peer through its TCP connection.
#pragma once

#include <ucp/api/ucp.h>

#include <vector>

#include "transport/network_factory.hpp"

namespace tern::ucx {

// Every rank's worker address (indexed by rank; this rank's own entry is `mine`). Throws tern::Error on a
// timeout, an abort, or a peer that closed its TCP connection during the exchange.
std::vector<std::vector<char>> exchangeAddresses(const NetworkSetup& setup, const std::vector<char>& mine);

// An endpoint to peer's worker whose failures are reported to onError(arg, ep, status). *peerErrors says whether
// UCX error handling is on for it.
ucp_ep_h connectEndpoint(ucp_worker_h worker, int rank, int peer, const std::vector<char>& address,
                         ucp_err_handler_cb_t onError, void* arg, bool* peerErrors);

}  // namespace tern::ucx
