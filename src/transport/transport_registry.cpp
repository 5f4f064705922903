#include "transport/transport_registry.hpp"

#include "base/error.hpp"

namespace tern {

namespace {

bool always() { return true; }

// Host transports move host memory, plain or registered, and nothing else.
bool anyPairHostMemory(const PeerPair& /*pair*/, MemoryKind kind) { return isHostMemory(kind); }
bool sameHostHostMemory(const PeerPair& pair, MemoryKind kind) { return pair.sameHost && isHostMemory(kind); }

}  // namespace

const std::vector<TransportEntry>& transportCatalogue() {
  static const std::vector<TransportEntry> entries = {
      {"tcp", true,
       "TcpTransport::connect, from the bootstrap's host table (every other network transport's setup "
       "runs over it)",
       always, anyPairHostMemory, nullptr},
      {"ucx", true, "createUcxTransport (src/transport/ucx), over the TCP mesh", ucxAvailable, anyPairHostMemory,
       createUcxTransport},
      {"ibverbs", true, "createIbverbsTransport (src/transport/ibverbs), over the TCP mesh", ibverbsAvailable,
       anyPairHostMemory, createIbverbsTransport},
      {"shm", false, "the intra-node fast path (algorithms/shm/intra_node.cpp) on the shm segment mesh", always,
       sameHostHostMemory, nullptr},
      // Every rank of an in-process communicator is a thread of this process: one host, one address space.
      {"inproc", false, "InprocTransport::join, for a unique id of ternGetUniqueIdInproc", always, anyPairHostMemory,
       nullptr},
  };
  return entries;
}

const TransportEntry* findTransport(const std::string& name) {
  for (const TransportEntry& e : transportCatalogue()) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

const TransportEntry& networkTransportNamed(const std::string& name) {
  const TransportEntry* e = findTransport(name.empty() ? "tcp" : name);
  if (e != nullptr && !e->network) {
    throwError(ternInvalidArgument,
               "TERN_TRANSPORT=%s: this communicator's unique id is a TCP rendezvous; %s is made by %s, not chosen "
               "for a network",
               name.c_str(), e->name, e->madeBy);
  }
  if (e == nullptr) {
    std::string names;
    for (const TransportEntry& n : transportCatalogue()) {
      if (n.network) names += names.empty() ? n.name : std::string(", ") + n.name;
    }
    throwError(ternInvalidArgument, "TERN_TRANSPORT=%s: expected one of %s (inproc is chosen by the unique id)",
               name.c_str(), names.c_str());
  }
  return *e;
}

std::vector<Transport*> routePeers(int rank, const std::vector<bool>& sameHost,
                                   const std::vector<RouteCandidate>& candidates, MemoryKind kind) {
  std::vector<Transport*> routes(sameHost.size(), nullptr);
  for (int p = 0; p < static_cast<int>(sameHost.size()); ++p) {
    if (p == rank) continue;
    const PeerPair pair{rank, p, sameHost[p]};
    for (const RouteCandidate& c : candidates) {
      if (c.transport != nullptr && c.entry->canConnect(pair, kind)) {
        routes[p] = c.transport;
        break;
      }
    }
  }
  return routes;
}

}  // namespace tern
