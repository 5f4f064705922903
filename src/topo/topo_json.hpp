// The JSON topology format (what topo/*.json hold, TERN_TOPO_DUMP_FILE writes and TERN_TOPO_FILE reads).
//
// Schema, version 1 (units: GB/s per direction, microseconds, Gb/s for line rates, GiB for memory):
//
//   {
//     "version": 1,                                   required; files of a newer version are refused
//     "name": "dgx-h100", "description": "...",       optional
//     "network": {"kind": "ib", "speed_gbps": 400, "latency_us": 1.0},
//         optional; kind ib | roce | ethernet | unknown; omitted fields (or the whole object) come from the NICs:
//         the fastest NIC's kind, the slowest host's best NIC speed, the kind's default latency
//     "hosts": [
//       {
//         "id": "dgx",               required, unique (hostname:bootid when detected)
//         "hostname": "dgx",         optional
//         "count": 2,                optional: this many identical hosts, ids (and hostnames) get "-0", "-1", ...
//         "nodes": [                 the machine node is implicit; parents must be listed before or after, any order
//           {"id": "pkg0", "type": "package", "os_index": 0, "vendor": "AuthenticAMD", "name": "AMD EPYC 7742",
//            "cores": 64, "pus": 128},
//           {"id": "numa0", "type": "numa", "parent": "pkg0", "os_index": 0, "memory_gb": 512, "cores": 64},
//           {"id": "sw0", "type": "pci_switch", "parent": "pkg0", "busid": "0000:0f:00.0",
//            "link": {"gen": 4, "width": 16}},
//           {"id": "gpu0", "type": "gpu", "parent": "sw0", "busid": "0000:07:00.0", "dev": 0, "name": "A100-SXM4-40GB",
//            "sm": 80, "memory_gb": 40, "link": {"gen": 4, "width": 16}},
//           {"id": "nic0", "type": "nic", "parent": "sw0", "busid": "0000:0c:00.0", "name": "mlx5_0", "dev": 0,
//            "kind": "ib", "speed_gbps": 200, "port": 1, "guid": "...", "netdev": "ib0", "gdr": true},
//           {"id": "nvs0", "type": "nvswitch"}
//         ],
//         "links": [                 links other than a node's link to its parent
//           {"a": "gpu0", "b": "nvs0", "type": "nvlink", "count": 12, "version": 3},
//           {"a": "pkg0", "b": "pkg1", "type": "smp", "bandwidth": 16}
//         ]
//       }
//     ],
//     "ranks": [{"host": 0, "gpu": "gpu0"}, {"host": "dgx-1", "numa": "numa1", "nic": "nic0"}, {"host": 1}]
//        "nic": the NIC the rank sends through across hosts (omitted: the nearest one, as topo/paths.hpp picks it)
//        or  {"per_host": 8, "bind": "gpu"}     bind: gpu (rank i of a host on its i-th GPU), numa (round-robin
//                                               over NUMA nodes) or none; omitted: one rank per GPU (or per host)
//   }
//
// Node types: package, numa, pci_switch, gpu, nic, nvswitch. A node without "parent" belongs to the machine (NUMA
// nodes, switches and devices then go to the first package). Link fields ("link" of a node, or an entry of
// "links"): type (memory | pcie | nvlink | smp; the parent link defaults to memory for NUMA nodes and pcie for the
// rest), gen + width (PCIe), count + version (NVLink; version defaults to the GPU's: sm 80 -> 3, 90 -> 4),
// bandwidth (GB/s per direction; computed from the other fields when omitted), latency_us.
//
// Written files are fully explicit (no count, no defaults left out), so load -> dump -> load is the identity.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "topo/topology.hpp"

namespace tern::topo {

inline constexpr int kTopoJsonVersion = 1;

// Parses a job. `source` (a file name) starts every error message: Error(ternInvalidArgument,
// "<source>: hosts[0].nodes[3] (\"gpu0\"): unknown parent \"sw9\"").
JobTopology jobFromJson(const nlohmann::json& j, const std::string& source);
JobTopology parseJobJson(std::string_view text, const std::string& source);

// Fields in a fixed, readable order (id, type, parent, ...), hence ordered_json.
nlohmann::ordered_json jobToJson(const JobTopology& job);
// Pretty-printed, one node or link per line.
std::string dumpJobJson(const JobTopology& job);

// One host, the element of "hosts" (without "count").
nlohmann::ordered_json hostToJson(const HostTopology& host);
HostTopology hostFromJson(const nlohmann::json& j, const std::string& where);

}  // namespace tern::topo
