// Connection setup messages over the TCP mesh where each peer gets its own message (a QP record is specific to
// the pair), unlike the shared-memory handshake where every peer gets the same one.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/network_factory.hpp"

namespace tern::ib {

// Sends toPeer[p] to every peer p (all `bytes` long; toPeer[rank] is ignored) and returns what each peer sent
// (indexed by rank). Throws tern::Error on a timeout, an abort or a peer that closed its connection.
std::vector<std::vector<uint8_t>> exchangeWithEachPeer(const NetworkSetup& setup,
                                                       const std::vector<std::vector<uint8_t>>& toPeer, size_t bytes,
                                                       const char* what);

}  // namespace tern::ib
