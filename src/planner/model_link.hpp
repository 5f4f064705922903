// The link classes of the cost model: what its alpha (latency) and beta (seconds per byte) terms are keyed on, and
// what a calibration file names.
//
// These are topo::LinkClass plus kLoopback. The topology says where two ranks are (same host, which bus); the
// model also needs to know how their bytes move: two CPU ranks of one host exchange data through shared-memory
// FIFOs (kShm) when the shm transport is up, but through the kernel's TCP loopback (kLoopback, several times
// slower and with tens of microseconds of latency) when TERN_SHM_DISABLE=1 or no intra-node path exists.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "topo/link.hpp"

namespace tern::planner {

enum class ModelLink : uint8_t {
  kShm,       // same host, shared memory (or the same device)
  kLoopback,  // same host, TCP sockets over the loopback interface
  kNvlink,    // NVLink, direct or through NVSwitch
  kPcie,      // PCIe through switches / one CPU's host bridge
  kSmp,       // across CPU sockets
  kNetwork,   // across hosts, through the ranks' NICs
};
inline constexpr int kNumModelLinks = 6;

// "shm", "loopback", "nvlink", "pcie", "smp", "network".
const char* modelLinkName(ModelLink c);
std::optional<ModelLink> parseModelLink(std::string_view name);
ModelLink fromTopoClass(topo::LinkClass c);

// How same-host ranks exchange bytes.
enum class IntraTransport : uint8_t {
  kTopology,  // as the topology path says: GPU ranks over NVLink/PCIe, CPU ranks over shared memory
  kShm,       // every same-host pair through shared memory (CPU ranks with the shm transport)
  kLoopback,  // every same-host pair through TCP loopback (TERN_SHM_DISABLE=1, or no shm transport)
};
const char* intraTransportName(IntraTransport t);  // "topology", "shm", "loopback"

}  // namespace tern::planner
