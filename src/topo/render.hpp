// Human-readable views of a topology (what tools/tern-topo prints, and what logs can show): an indented tree per host
// with a device path matrix in the style of `nvidia-smi topo -m`, and Graphviz dot.
#pragma once

#include <string>

#include "topo/paths.hpp"
#include "topo/topology.hpp"

namespace tern::topo {

// The whole job as text: a summary line, then per host the containment tree (package -> NUMA / PCIe switches ->
// GPUs and NICs, with link kinds and speeds and the ranks on each GPU), the NVLink and SMP links, the GPU/NIC/NUMA
// path matrix, and, for a job of several ranks, the path from rank 0 to each other rank. Hosts identical to an
// earlier one are summarised in one line.
std::string renderText(const JobTopology& job);

// The path matrix of one host: rows and columns are its GPUs, NICs and NUMA nodes; cells are path types (X on the
// diagonal), followed by a legend.
std::string renderPathMatrix(const HostTopology& host, const HostPaths& paths);

// Graphviz dot: one cluster per host, edges labelled with link kind and bandwidth, NICs joined to a network node.
std::string renderDot(const JobTopology& job);

// "PCIe Gen5 x16, 48 GB/s", "NVLink4 x18, 450 GB/s", "SMP 22 GB/s", "memory 100 GB/s".
std::string describeLink(const Link& link);

// A bandwidth or speed without trailing noise: 450, 48, 3.125, 12.5.
std::string formatNumber(double v);

}  // namespace tern::topo
