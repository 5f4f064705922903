#include "topo/assemble.hpp"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "topo/paths.hpp"
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

namespace {

constexpr int kRankRecordVersion = 1;
// Far above any real host (a DGX is about a hundred nodes), low enough that a hostile record cannot make the
// graph's quadratic steps (id lookups, SMP links between packages) expensive.
constexpr size_t kMaxRecordNodes = 2048;
constexpr size_t kMaxRecordLinks = 8192;
constexpr int kMaxRecordPackages = 64;
constexpr size_t kMaxHostIdBytes = 1024;
constexpr size_t kMaxBusIdBytes = 32;
constexpr size_t kNormalizedBusIdBytes = 12;  // "dddd:bb:dd.f"

[[noreturn]] void badRecord(int rank, const std::string& what) {
  throwError(ternInvalidArgument, "rank %d's topology record: %s", rank, what.c_str());
}

// An integer field in [lo, hi] (nlohmann keeps unsigned and signed integers apart; both are range-checked).
long long recordInt(const nlohmann::json& o, const char* key, long long lo, long long hi, int rank) {
  auto it = o.find(key);
  if (it == o.end()) badRecord(rank, format("missing \"%s\"", key));
  long long v = 0;
  if (it->is_number_unsigned()) {
    const auto u = it->get<unsigned long long>();
    if (u > static_cast<unsigned long long>(hi)) badRecord(rank, format("\"%s\" out of range", key));
    v = static_cast<long long>(u);
  } else if (it->is_number_integer()) {
    v = it->get<long long>();
  } else {
    badRecord(rank, format("\"%s\" must be an integer", key));
  }
  if (v < lo || v > hi) badRecord(rank, format("\"%s\" out of range", key));
  return v;
}

double recordNumber(const nlohmann::json& o, const char* key, int rank) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) badRecord(rank, format("\"%s\" must be a number", key));
  const double v = it->get<double>();
  if (!std::isfinite(v)) badRecord(rank, format("\"%s\" must be finite", key));
  return v;
}

}  // namespace

std::string encodeRankRecord(const RankRecord& record) {
  nlohmann::ordered_json j = {{"v", kRankRecordVersion}, {"host", record.hostId}, {"numa", record.numaOsIndex}};
  if (!record.gpuBusId.empty()) j["gpu"] = record.gpuBusId;
  if (record.host) j["graph"] = hostToJson(*record.host);
  if (record.network) {
    j["network"] = {{"kind", netKindName(record.network->kind)},
                    {"speed_gbps", record.network->speedGbps},
                    {"latency_us", record.network->latencyUs}};
  }
  return j.dump();
}

RankRecord decodeRankRecord(std::string_view text, int rank) {
  if (text.size() > kMaxRankRecordBytes) badRecord(rank, format("%zu bytes, more than any host needs", text.size()));
  const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) badRecord(rank, "not JSON");
  if (!j.is_object()) badRecord(rank, "not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "v" && key != "host" && key != "numa" && key != "gpu" && key != "graph" && key != "network") {
      badRecord(rank, format("unknown field \"%s\"", key.c_str()));
    }
  }
  if (recordInt(j, "v", 0, 1 << 30, rank) != kRankRecordVersion) {
    badRecord(rank, format("version %lld, this build reads %d (every rank must run the same tern)",
                           recordInt(j, "v", 0, 1 << 30, rank), kRankRecordVersion));
  }
  RankRecord r;
  auto host = j.find("host");
  if (host == j.end() || !host->is_string()) badRecord(rank, "\"host\" must be a string");
  r.hostId = host->get<std::string>();
  if (r.hostId.empty() || r.hostId.size() > kMaxHostIdBytes) badRecord(rank, "bad host id length");
  r.numaOsIndex = static_cast<int>(recordInt(j, "numa", -1, 1 << 20, rank));
  if (auto gpu = j.find("gpu"); gpu != j.end()) {
    if (!gpu->is_string()) badRecord(rank, "\"gpu\" must be a string");
    r.gpuBusId = gpu->get<std::string>();
    // A PCI address, as the CUDA driver writes it ("0000:1b:00.0"); anything else is not from a tern rank.
    if (r.gpuBusId.empty() || r.gpuBusId.size() > kMaxBusIdBytes ||
        normalizeBusId(r.gpuBusId).size() != kNormalizedBusIdBytes) {
      badRecord(rank, "\"gpu\" is not a PCI bus id");
    }
  }
  if (auto graph = j.find("graph"); graph != j.end()) {
    auto nodes = graph->is_object() ? graph->find("nodes") : graph->end();
    auto links = graph->is_object() ? graph->find("links") : graph->end();
    if ((nodes != graph->end() && nodes->is_array() && nodes->size() > kMaxRecordNodes) ||
        (links != graph->end() && links->is_array() && links->size() > kMaxRecordLinks)) {
      badRecord(rank, "the host graph is larger than any host");
    }
    const std::string where = format("rank %d's topology record: graph", rank);
    try {
      HostTopology h = hostFromJson(*graph, where);
      if (h.count(NodeType::kPackage) > kMaxRecordPackages) badRecord(rank, "more CPU packages than any host");
      h.id = r.hostId;
      validate(singleHostJob(h), where);
      r.host = std::move(h);
    } catch (const Error&) {
      throw;  // hostFromJson and validate name the record and the problem
    } catch (const std::exception& e) {
      badRecord(rank, format("graph: %s", e.what()));
    }
  }
  if (auto net = j.find("network"); net != j.end()) {
    if (!net->is_object()) badRecord(rank, "\"network\" must be an object");
    auto kind = net->find("kind");
    if (kind == net->end() || !kind->is_string()) badRecord(rank, "network \"kind\" must be a string");
    const std::optional<NetKind> k = parseNetKind(kind->get<std::string>());
    if (!k) badRecord(rank, "unknown network kind");
    Network n;
    n.kind = *k;
    n.speedGbps = recordNumber(*net, "speed_gbps", rank);
    n.latencyUs = recordNumber(*net, "latency_us", rank);
    if (!(n.speedGbps > 0 || n.speedGbps == -1) || !(n.latencyUs >= 0 || n.latencyUs == -1)) {
      badRecord(rank, "network speed must be > 0 and latency >= 0 (or -1 for unknown)");
    }
    r.network = n;
  }
  return r;
}

JobTopology assembleJobFromRecords(const std::vector<RankRecord>& records, NetKind fallbackKind,
                                   const std::vector<std::string>* expectedHostIds) {
  if (records.empty()) throwError(ternInvalidArgument, "job topology: no ranks");
  if (expectedHostIds != nullptr && expectedHostIds->size() != records.size()) {
    throwError(ternInternalError, "job topology: %zu records for %zu ranks", records.size(), expectedHostIds->size());
  }
  JobTopology job;
  job.name = "job";
  std::map<std::string, int> hostIndex;
  for (size_t r = 0; r < records.size(); ++r) {
    const RankRecord& record = records[r];
    if (expectedHostIds != nullptr && (*expectedHostIds)[r] != record.hostId) {
      throwError(ternInvalidArgument, "rank %zu's topology record names host \"%s\", the bootstrap \"%s\"", r,
                 record.hostId.c_str(), (*expectedHostIds)[r].c_str());
    }
    auto [it, added] = hostIndex.try_emplace(record.hostId, static_cast<int>(job.hosts.size()));
    if (added) {
      if (!record.host) {
        throwError(ternInvalidArgument, "rank %zu is the first rank of host \"%s\" but sent no host graph", r,
                   record.hostId.c_str());
      }
      job.hosts.push_back(*record.host);
      job.hosts.back().id = record.hostId;
    }
    const HostTopology& host = job.hosts[it->second];
    RankPlacement p;
    p.host = it->second;
    const std::vector<int> numas = host.nodesOfType(NodeType::kNuma);
    for (int n : numas) {
      if (record.numaOsIndex >= 0 && host.nodes[n].osIndex == record.numaOsIndex) p.numa = n;
    }
    if (p.numa < 0 && numas.size() == 1) p.numa = numas[0];  // one NUMA node: every rank is on it
    if (!record.gpuBusId.empty()) {
      const std::string busId = normalizeBusId(record.gpuBusId);
      for (int g : host.nodesOfType(NodeType::kGpu)) {
        if (host.nodes[g].busId == busId) p.gpu = g;
      }
    }
    job.ranks.push_back(p);
  }
  if (records[0].network) {
    job.network = *records[0].network;
  } else {
    job.network = deriveNetwork(job.hosts);
    job.network.latencyUs = -1;
  }
  if (job.network.kind == NetKind::kUnknown) job.network.kind = fallbackKind;
  if (job.network.latencyUs < 0) job.network.latencyUs = defaultNetLatencyUs(job.network.kind);
  validate(job, "job topology");
  const JobPaths paths(job);
  for (size_t r = 0; r < job.ranks.size(); ++r) job.ranks[r].nic = paths.nicOf(static_cast<int>(r));
  return job;
}

}  // namespace tern::topo
