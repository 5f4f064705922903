// This process's view of its host, as communicator init needs it: detected once per process (hwloc or sysfs, NVML
// when present; topo/detect.hpp) or loaded from TERN_TOPO_FILE, then shared by every communicator the process
// creates. Detection walks sysfs and PCI, which is too slow to repeat for each communicator (splits, restarts).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "topo/topology.hpp"

namespace tern::topo {

struct LocalTopology {
  HostTopology host;
  std::optional<Network> network;  // the file's network (declared, or what its NICs imply); none when detected
  std::string source;              // "detected" or the file's path
  double seconds = 0;              // what detecting or loading took, once
};

// The host for topoFile ("" = detect). Loaded or detected on the first call for a given file, then the same object
// on every call. Errors (a bad file) are Error(ternInvalidArgument) and are not cached: the next call tries again.
// Thread-safe; *cached, when given, says whether this call reused an earlier result.
std::shared_ptr<const LocalTopology> processLocalTopology(const std::string& topoFile, bool* cached = nullptr);

// How many times processLocalTopology detected or loaded (for tests: the cache holds).
int localTopologyLoads();

// OS index of the NUMA node holding every CPU this thread may run on (sched_getaffinity against
// /sys/devices/system/node/node*/cpulist); -1 when they span several nodes or the system has no NUMA information.
int boundNumaNode();

}  // namespace tern::topo
