#include "planner/perf_records.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "exec/collective.hpp"

namespace tern::planner {

IntraTransport PerfRun::intra() const { return transport == "tcp" ? IntraTransport::kLoopback : IntraTransport::kShm; }

PerfRun loadPerfRun(const std::string& pathSpec, int defaultNodes) {
  std::string path = pathSpec;
  int nodes = -1;
  const size_t at = pathSpec.rfind('@');
  if (at != std::string::npos && !std::filesystem::exists(pathSpec)) {
    path = pathSpec.substr(0, at);
    const std::string n = pathSpec.substr(at + 1);
    char* end = nullptr;
    nodes = static_cast<int>(std::strtol(n.c_str(), &end, 10));
    if (n.empty() || *end != '\0' || nodes < 1) {
      throwError(ternInvalidArgument, "%s: expected FILE@NODES with NODES >= 1", pathSpec.c_str());
    }
  }
  std::ifstream f(path);
  if (!f) throwError(ternInvalidArgument, "%s: cannot read the perf results", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  PerfRun run;
  run.source = path;
  try {
    const nlohmann::json doc = nlohmann::json::parse(ss.str());
    if (!doc.is_object() || !doc.contains("results") || !doc.contains("collective") || !doc.contains("nranks")) {
      throwError(ternInvalidArgument, "%s: not a perf result file (needs collective, nranks, results)", path.c_str());
    }
    run.collectiveName = doc["collective"].get<std::string>();
    bool ok = false;
    run.collective = parseCollectiveName(run.collectiveName, &ok);
    if (!ok) throwError(ternInvalidArgument, "%s: unknown collective '%s'", path.c_str(), run.collectiveName.c_str());
    run.nranks = doc["nranks"].get<int>();
    if (run.nranks < 1) throwError(ternInvalidArgument, "%s: nranks must be >= 1", path.c_str());
    run.transport = doc.value("transport", std::string("tcp"));
    run.compress = doc.value("compress", std::string());
    run.nodes = nodes > 0 ? nodes : doc.value("nodes", doc.value("hosts", defaultNodes));
    if (run.nodes < 1 || run.nranks % run.nodes != 0) {
      throwError(ternInvalidArgument, "%s: %d ranks do not split evenly over %d nodes", path.c_str(), run.nranks,
                 run.nodes);
    }
    for (const nlohmann::json& r : doc["results"]) {
      PerfPoint p;
      p.bytes = r.at("size").get<double>();
      p.seconds = r.at("out_of_place").at("time_us").get<double>() * 1e-6;
      p.algorithm = r.value("algorithm", std::string());
      const std::string type = r.value("type", std::string("float"));
      for (int t = 0; t < ternNumTypes; ++t) {
        if (type == dataTypeName(static_cast<ternDataType_t>(t))) run.dtype = static_cast<ternDataType_t>(t);
      }
      if (p.bytes <= 0 || p.seconds <= 0) continue;
      run.points.push_back(p);
    }
  } catch (const nlohmann::json::exception& e) {
    throwError(ternInvalidArgument, "%s: %s", path.c_str(), e.what());
  }
  if (run.points.empty()) throwError(ternInvalidArgument, "%s: no measurements in it", path.c_str());
  return run;
}

}  // namespace tern::planner
