// Helpers shared by the detectors (hwloc and sysfs) and the file loaders: recognising GPUs, tidying a detected
// graph into a canonical order.
#pragma once

#include <cstdint>
#include <string>

#include "topo/topology.hpp"

namespace tern::topo {

// An NVIDIA GPU: vendor 0x10de with PCI class 0x0302 (3D controller) or 0x0300 (VGA controller). `classId` is the
// 16-bit class/subclass ("0302").
bool isNvidiaGpu(uint16_t vendorId, uint16_t classId);

// Removes PCI switches with no GPU or NIC below them (storage and empty slots), with their links.
void pruneEmptySwitches(HostTopology& host);

// Puts a detected host in a stable order and names its nodes by type and position: packages and NUMA nodes by OS
// index (pkg0.., numa0..), switches by bus id (sw0..), GPUs by CUDA index where known, else by bus id (gpu0.., and
// the position becomes the CUDA index, as with CUDA_DEVICE_ORDER=PCI_BUS_ID), NICs by name in natural order
// (mlx5_2 before mlx5_10; nic0..). Node order is what default rank placement follows.
void canonicalizeDevices(HostTopology& host);

// The last component of a path ("topo/dgx-h100.json" -> "dgx-h100.json").
std::string baseName(const std::string& path);

}  // namespace tern::topo
