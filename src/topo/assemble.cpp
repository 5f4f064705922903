#include "topo/assemble.hpp"

#include <map>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "topo/topo_file.hpp"
#include "topo/topo_json.hpp"

namespace tern::topo {

RankReport localRankReport(const std::string& gpuBusId, int numaOsIndex) {
  return RankReport{localHostTopology(), gpuBusId, numaOsIndex};
}

std::string encodeRankReport(const RankReport& report) {
  nlohmann::ordered_json j = {
      {"host", hostToJson(report.host)}, {"gpu", report.gpuBusId}, {"numa", report.numaOsIndex}};
  return j.dump();
}

RankReport decodeRankReport(std::string_view text, int rank) {
  const std::string where = format("rank %d's topology report", rank);
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("host") || !j["gpu"].is_string() || !j["numa"].is_number_integer()) {
    throwError(ternInvalidArgument, "%s: malformed", where.c_str());
  }
  RankReport r;
  r.host = hostFromJson(j["host"], where);
  r.gpuBusId = j["gpu"].get<std::string>();
  r.numaOsIndex = j["numa"].get<int>();
  return r;
}

JobTopology assembleJob(const std::vector<RankReport>& reports, const Network* network) {
  JobTopology job;
  std::map<std::string, int> hostIndex;
  for (size_t r = 0; r < reports.size(); ++r) {
    const RankReport& report = reports[r];
    auto [it, added] = hostIndex.try_emplace(report.host.id, static_cast<int>(job.hosts.size()));
    if (added) job.hosts.push_back(report.host);
    const HostTopology& host = job.hosts[it->second];
    RankPlacement p{it->second, -1, -1};
    if (!report.gpuBusId.empty()) {
      const std::string busId = normalizeBusId(report.gpuBusId);
      for (int g : host.nodesOfType(NodeType::kGpu)) {
        if (host.nodes[g].busId == busId) p.gpu = g;
      }
      if (p.gpu < 0) {
        throwError(ternInvalidArgument, "rank %zu: GPU %s is not in the topology of host \"%s\"", r, busId.c_str(),
                   host.id.c_str());
      }
    }
    for (int n : host.nodesOfType(NodeType::kNuma)) {
      if (report.numaOsIndex >= 0 && host.nodes[n].osIndex == report.numaOsIndex) p.numa = n;
    }
    job.ranks.push_back(p);
  }
  if (network != nullptr) {
    job.network = *network;
  } else {
    job.network = deriveNetwork(job.hosts);
    job.network.latencyUs = defaultNetLatencyUs(job.network.kind);
  }
  job.name = "job";
  validate(job, "job topology");
  return job;
}

}  // namespace tern::topo
