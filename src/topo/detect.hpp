// Detection of the local host's topology, and hwloc XML files (which hwloc itself parses).
//
// With hwloc (TERN_HAVE_HWLOC, detect_hwloc.cpp): packages, NUMA nodes with their memory, cores, the PCIe tree with
// link speeds (PCI devices kept with hwloc's KEEP_IMPORTANT I/O filter), GPUs (NVIDIA display/3D controllers), NICs
// (OpenFabrics devices for InfiniBand/RoCE, network interfaces for Ethernet, speeds read from sysfs). Without hwloc
// (detect_sysfs.cpp): a minimal host from sysconf and /sys: packages, cores, NUMA nodes, NVIDIA GPUs and NICs, all
// attached to their NUMA node's package with no switch structure.
//
// Either way, when libnvidia-ml.so.1 can be opened at run time (topo/nvml.hpp), GPUs get their product name,
// compute capability, memory and NVLinks from NVML. The build never depends on it.
//
// How hwloc's PCI bridges become switches: hwloc lists every bridge, and a PCIe switch shows up as an upstream port
// bridge with one downstream port bridge per device. Like NCCL, which skips two sysfs levels per switch, tern folds
// them: the bridges right under a host bridge are root ports (part of the CPU, so devices under them hang off the
// package); below a root port or a downstream port a bridge is a switch's upstream port (a new switch node); below
// an upstream port a bridge is one of its downstream ports (folded into that switch).
#pragma once

#include <string>
#include <string_view>

#include "topo/topology.hpp"

namespace tern::topo {

// The local host. Its id is hostId() (so TERN_HOSTID applies), its hostname gethostname(). Throws
// Error(ternSystemError) only when even the sysconf fallback fails.
HostTopology detectHost();

// A host from an hwloc XML file (as written by `lstopo --of xml` or hwloc_topology_export_xml). The host id is the
// file's HostName (or the file name). Without hwloc support throws Error(ternInvalidArgument) saying so; a file hwloc
// rejects throws Error(ternInvalidArgument, "<path>: ...").
//
// hwloc's importer is not hardened against malformed files (some well-formed XML makes it dereference wild
// pointers), and a file a user names must never crash the process reading it. So the bytes are first imported in a
// forked child; only when that child imported and converted them without crashing (within a deadline) does this
// process import them itself, from the same bytes: hwloc is deterministic on them. A file that crashed or hung the
// child throws Error(ternInvalidArgument, "<path>: hwloc crashed importing it ...").
HostTopology loadHwlocXml(const std::string& path);
// The same from the file's bytes, already read; `source` names it in errors and, without a HostName, is the host id.
HostTopology parseHwlocXml(std::string_view text, const std::string& source);

}  // namespace tern::topo
