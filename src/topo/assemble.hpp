// Building the whole-job topology at communicator init. The communicator uses RankRecord (below): every rank sends
// where it is (host id, NUMA node) and the lowest rank of each host also sends that host's graph; every rank
// decodes all records and calls assembleJobFromRecords() on the same list, so every rank gets the same JobTopology.
//
// RankReport is the older, self-contained form (every report carries its whole host), kept for tools and tests:
//   std::vector<RankReport> reports;  // decodeRankReport(allgathered[r], r)
//   JobTopology job = assembleJob(reports);
//   JobPaths paths(job);                                           // topo/paths.hpp
//   RankPath p = paths.between(rank, peer);                        // p.linkClass, p.bandwidth, p.latencyUs
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topo/topology.hpp"

namespace tern::topo {

struct RankReport {
  HostTopology host;     // the rank's host, as localHostTopology() gives it
  std::string gpuBusId;  // PCI bus id of the rank's GPU, "" for a CPU rank
  int numaOsIndex = -1;  // OS index of the NUMA node the rank is bound to, -1 when unbound
};

// This process's report: localHostTopology() (TERN_TOPO_FILE / detection, TERN_TOPO_DUMP_FILE) plus the arguments.
RankReport localRankReport(const std::string& gpuBusId, int numaOsIndex);

// A report as compact JSON text, and back. decodeRankReport's errors name the rank: Error(ternInvalidArgument,
// "rank 3's topology report: ...").
std::string encodeRankReport(const RankReport& report);
RankReport decodeRankReport(std::string_view text, int rank);

// The job of reports[r] = rank r. `network`, when given, replaces the one the NICs imply. Throws
// Error(ternInvalidArgument) when a rank names a GPU its host does not have.
JobTopology assembleJob(const std::vector<RankReport>& reports, const Network* network = nullptr);

// What a rank tells the others at communicator init (core/communicator.cpp exchanges these by an allgather over
// the communicator's own transport). Compact: only the lowest rank of each host sends that host's graph, the others
// say where they are in it. Host ids are the bootstrap's, so that the job groups ranks exactly as the transports do.
struct RankRecord {
  std::string hostId;
  int numaOsIndex = -1;              // the NUMA node the rank is bound to (local_topology.hpp), -1 when unbound
  std::string gpuBusId;              // PCI bus id of the GPU the rank drives (its current CUDA device), "" for none
  std::optional<HostTopology> host;  // the host's graph (its id is replaced by hostId)
  std::optional<Network> network;    // rank 0 only, when its topology came from a file: that file's network
};

// A record as compact JSON, and back. The text comes from another process: decodeRankRecord checks everything
// (size, syntax, types, the graph's consistency) and throws Error(ternInvalidArgument, "rank 3's topology record:
// ...") for anything wrong, never anything else.
inline constexpr size_t kMaxRankRecordBytes = size_t{1} << 20;
std::string encodeRankRecord(const RankRecord& record);
RankRecord decodeRankRecord(std::string_view text, int rank);

// The job of records[r] = rank r: hosts in order of first appearance, each host's graph from the lowest rank on it,
// CPU ranks bound to the NUMA node they reported (or the host's only one), GPU ranks placed on the GPU they named
// where the host's graph has it (a GPU the graph lacks, as when detection saw no NVML, leaves a CPU rank: the model
// then prices that rank's calls as a CPU's, which the caller may warn about), each on its nearest NIC (written into
// the placement, so that a dump names it). The network: rank 0's file network when it has one, else what the NICs
// imply (deriveNetwork), with fallbackKind when no host has a NIC of known kind. Throws Error(ternInvalidArgument)
// when the lowest rank of a host sent no graph, or a rank's host id is not expectedHostIds[r] (when given).
JobTopology assembleJobFromRecords(const std::vector<RankRecord>& records, NetKind fallbackKind,
                                   const std::vector<std::string>* expectedHostIds = nullptr);

}  // namespace tern::topo
