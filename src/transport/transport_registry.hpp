// The transports tern has, in one table: how each is made, and which pairs of ranks and memory kinds it can serve.
//
// The communicator picks the network transport by name (TERN_TRANSPORT) from this table and then routes every
// peer to the first transport, in order of preference, whose entry says it can connect that pair for the memory
// being moved. Adding a transport is one row here (see docs/DESIGN.md, "How to add a transport").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/memory.hpp"
#include "transport/network_factory.hpp"
#include "transport/transport.hpp"

namespace tern {

// Two ranks of one communicator, as a transport's applicability sees them.
struct PeerPair {
  int rank = 0;
  int peer = 0;
  bool sameHost = false;
};

struct TransportEntry {
  const char* name;    // TERN_TRANSPORT's value for network transports; the transport's name() otherwise
  bool network;        // serves peers on any host, chosen by TERN_TRANSPORT; false: same-host or same-process only
  const char* madeBy;  // where the transport is created, for the docs and tern-topo
  bool (*built)();     // compiled into this library (its optional dependency was found)
  // Whether this transport can move memory of this kind between the pair.
  bool (*canConnect)(const PeerPair& pair, MemoryKind kind);
  // Network transports set up over the TCP mesh (which carries their address exchange and stays open as the
  // liveness channel); nullptr for transports made elsewhere (madeBy says where).
  std::unique_ptr<Transport> (*create)(const NetworkSetup& setup);
};

// Every transport, network ones first in TERN_TRANSPORT's documented order.
const std::vector<TransportEntry>& transportCatalogue();

// The entry named name, or nullptr.
const TransportEntry* findTransport(const std::string& name);

// The network transport TERN_TRANSPORT names ("" means tcp). Throws tern::Error(ternInvalidArgument) naming the
// network transports when there is none of that name.
const TransportEntry& networkTransportNamed(const std::string& name);

// One candidate for routing: a live transport and its entry.
struct RouteCandidate {
  Transport* transport = nullptr;
  const TransportEntry* entry = nullptr;
};

// For each peer of rank (sameHost[p]: p shares rank's host), the first candidate that can connect the pair for
// kind; nullptr for rank itself and for a peer no candidate reaches.
std::vector<Transport*> routePeers(int rank, const std::vector<bool>& sameHost,
                                   const std::vector<RouteCandidate>& candidates, MemoryKind kind);

}  // namespace tern
