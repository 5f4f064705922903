// What the shared-memory segment mesh of a communicator is made from (shm::Mesh::create), and the zero-copy
// registered buffers peers can map. The intra-node fast path built on the mesh (direct collectives and the
// point-to-point transport) is algorithms/shm/intra_node.hpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "base/unique_id.hpp"

namespace tern {

class TcpTransport;

struct IntraNodeSetup {
  int rank = 0;
  int nranks = 1;
  std::vector<std::string> hostIds;  // per rank
  Secret secret;                     // goes into segment names
  int timeoutMs = 300000;
  TcpTransport* tcp = nullptr;  // connected to every peer; for the handshake and liveness
  const std::atomic<bool>* abortFlag = nullptr;
  // The ranks of this machine, whatever host each is in, each have a CPU of their own (machineRanksOwnCpus,
  // bootstrap.hpp): false where hosts that TERN_HOSTID made of one machine's namespaces share its CPUs.
  bool machineRanksOwnCpus = true;
};

// Zero-copy registered buffers (ternMemAlloc / ternMemFree): shared-memory backed, mappable by peers.
void* shmAlloc(size_t bytes);
void shmFree(void* p);

}  // namespace tern
