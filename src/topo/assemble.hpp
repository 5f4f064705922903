// Building the whole-job topology at communicator init. Every rank describes itself (its host's topology, its GPU,
// its NUMA node) in a RankReport; the reports are exchanged (an allgather of encodeRankReport() strings); every rank
// then calls assembleJob() on the same list and gets the same JobTopology. Ranks whose hosts have the same host id
// are on one host (topo/host_id.hpp), and that host's graph is taken from the lowest such rank.
//
//   std::string mine = encodeRankReport(localRankReport(gpuBusId, numaNode));
//   std::vector<std::string> all = allgather(mine);               // bootstrap's job
//   std::vector<RankReport> reports;
//   for (int r = 0; r < n; ++r) reports.push_back(decodeRankReport(all[r], r));
//   JobTopology job = assembleJob(reports);
//   JobPaths paths(job);                                           // topo/paths.hpp
//   RankPath p = paths.between(rank, peer);                        // p.linkClass, p.bandwidth, p.latencyUs
#pragma once

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

}  // namespace tern::topo
