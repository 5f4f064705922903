// Optional GPU details from NVML. libnvidia-ml.so.1 is opened with dlopen at run time, so tern builds and runs on
// machines without the NVIDIA driver; there, addNvmlInfo() does nothing.
#pragma once

#include "topo/topology.hpp"

namespace tern::topo {

// For every GPU node of `host` (matched by PCI bus id) NVML knows: product name, compute capability, memory, and its
// active NVLinks: links to another GPU become one GPU-GPU NVLink edge (count = number of links), links to NVSwitches
// become one edge to the host's NVSwitch fabric node ("nvs0", created when needed). Returns false (and changes
// nothing) when NVML is absent or fails to initialise.
bool addNvmlInfo(HostTopology& host);

}  // namespace tern::topo
